// Upstream discovery for system identities only (`--confine-upstream-discovery`): the `system:discovery` binding,
// which lists every tenant's CRD groups, bound to the control plane's own identities instead of every authenticated one.
// Never binds a group a tenant identity is in (system:authenticated, system:serviceaccounts), and never leaves out tenantgate itself.
import { upstreamJson } from '../upstream/client.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import type { KeptObject } from './kept-objects.ts';

/** The apiserver's RBAC bootstrap puts back a default binding's subjects on restart unless this says "false". */
export const AUTOUPDATE_ANNOTATION = 'rbac.authorization.kubernetes.io/autoupdate';

const RBAC_GROUP = 'rbac.authorization.k8s.io';

interface Subject {
  apiGroup: string;
  kind: 'User' | 'Group';
  name: string;
}

const user = (name: string): Subject => ({ apiGroup: RBAC_GROUP, kind: 'User', name });
const group = (name: string): Subject => ({ apiGroup: RBAC_GROUP, kind: 'Group', name });

/**
 * Who reads upstream discovery besides system:masters (which RBAC never asks): the controller manager (its own user,
 * and its controllers' kube-system service accounts with --use-service-account-credentials: the garbage collector,
 * namespace and quota controllers walk discovery), the scheduler, kubelets and kube-proxy.
 */
export const SYSTEM_DISCOVERY_SUBJECTS: readonly Subject[] = [
  user('system:kube-controller-manager'),
  group('system:serviceaccounts:kube-system'),
  user('system:kube-scheduler'),
  group('system:nodes'),
  user('system:kube-proxy'),
];

/** The `system:discovery` binding with `extraUsers` (tenantgate's own user) added to the system subjects. */
export function confinedDiscoveryBinding(extraUsers: readonly string[]): KeptObject {
  const subjects = [...SYSTEM_DISCOVERY_SUBJECTS];
  for (const name of extraUsers) if (!subjects.some((s) => s.kind === 'User' && s.name === name)) subjects.push(user(name));
  return {
    collection: `/apis/${RBAC_GROUP}/v1/clusterrolebindings`,
    object: {
      apiVersion: `${RBAC_GROUP}/v1`,
      kind: 'ClusterRoleBinding',
      metadata: { name: 'system:discovery', annotations: { [AUTOUPDATE_ANNOTATION]: 'false' } },
      roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: 'system:discovery' },
      subjects,
    },
  };
}

/**
 * tenantgate's own upstream user, when RBAC decides its requests: none for system:masters, which bypasses RBAC.
 * (SelfSubjectReview: the apiserver says who the kubeconfig's credentials are.)
 */
export async function ownUpstreamUsers(pool: UpstreamPool): Promise<string[]> {
  const review = await upstreamJson(pool, 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'SelfSubjectReview',
  });
  const info = review.body?.status?.userInfo;
  if (review.status !== 201 || typeof info?.username !== 'string') {
    throw new Error(`--confine-upstream-discovery: cannot learn tenantgate's own upstream user (SelfSubjectReview answered ${review.status})`);
  }
  return Array.isArray(info.groups) && info.groups.includes('system:masters') ? [] : [info.username];
}
