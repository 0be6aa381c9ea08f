// Points tenants' pods at tenantgate instead of the upstream: an upstream MutatingAdmissionPolicy, kept by tenantgate,
// rewrites the service-account volume the ServiceAccount admission plugin gives a tenant's pod (its token stays a real
// upstream token, which tenantgate accepts through TokenReview; its CA becomes tenantgate's; its namespace file the
// tenant's own name) and sets KUBERNETES_SERVICE_HOST/PORT to tenantgate's in-cluster address.
// Never touches a pod outside a tenant's namespaces, nor one that mounts its own token path or gets no token.
import { PREFIX_LENGTH, TENANT_LABEL } from '../convert/prefix.ts';
import type { KeptObject } from './kept-objects.ts';
import { cel } from './confinement-policy.ts';
import type { ClusterAddress } from './cluster-service.ts';

/** Name of the policy and of its binding (`tenant` + `g` is no tenant's `<id>-` prefix). */
export const TENANT_IN_CLUSTER_ACCESS = 'tenantgate.tenant-in-cluster-access';
/** The pod annotations the rewritten volume projects as `ca.crt` and `namespace`. */
export const CA_ANNOTATION = 'tenantgate.kubezoo.io/ca.crt';
export const NAMESPACE_ANNOTATION = 'tenantgate.kubezoo.io/namespace';
/** Where in-cluster clients read their credentials, and the volume name prefix of the ServiceAccount plugin. */
export const SERVICE_ACCOUNT_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
export const TOKEN_VOLUME_PREFIX = 'kube-api-access-';
/** The ServiceAccount plugin's token lifetime (it asks the kubelet for an hour and seven seconds). */
const TOKEN_EXPIRATION_SECONDS = 3607;

export interface InClusterAccess {
  address: ClusterAddress;
  /** The CA bundle, PEM, that verifies tenantgate's serving certificate at `address`. */
  caPem: string;
}

const ADMISSION = 'admissionregistration.k8s.io/v1';
const VOLUMES = 'object.spec.volumes';
/** The volume the ServiceAccount plugin gave the pod (the first such, as the plugin itself finds it). */
const TOKEN_VOLUME = `${VOLUMES}.filter(v, v.name.startsWith(${cel(TOKEN_VOLUME_PREFIX)}) && has(v.projected))[0].name`;
/** A mount at the token path of anything but that volume: the pod brings its own credentials. */
const mountsOwnToken = (containers: string) =>
  `(has(${containers}) && ${containers}.exists(c, has(c.volumeMounts) && c.volumeMounts.exists(m, m.mountPath == ${cel(SERVICE_ACCOUNT_MOUNT_PATH)} && m.name != ${TOKEN_VOLUME})))`;
/** Each container of `containers` with the service variables it does not set itself (its own value wins, as with the kubelet's). */
const withServiceEnv = (containers: string, type: string) =>
  `${containers}.map(c, ${type}{name: c.name, env: variables.serviceEnv.filter(e, !has(c.env) || !c.env.exists(x, x.name == e.name)).map(e, ${type}.env{name: e.name, value: e.value})})`;

/** The policy for one in-cluster address and CA; the apiserver applies it to every pod created in a tenant's namespace. */
export function inClusterAccessPolicy(access: InClusterAccess): Record<string, unknown> & { metadata: { name: string } } {
  const { host, port } = access.address;
  const item = (path: string, annotation: string) =>
    `{'path': dyn(${cel(path)}), 'fieldRef': dyn({'apiVersion': 'v1', 'fieldPath': ${cel(`metadata.annotations['${annotation}']`)}})}`;
  return {
    apiVersion: ADMISSION,
    kind: 'MutatingAdmissionPolicy',
    metadata: { name: TENANT_IN_CLUSTER_ACCESS },
    spec: {
      failurePolicy: 'Fail',
      reinvocationPolicy: 'Never',
      matchConstraints: {
        matchPolicy: 'Equivalent',
        namespaceSelector: { matchExpressions: [{ key: TENANT_LABEL, operator: 'Exists' }] },
        objectSelector: {},
        resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], scope: 'Namespaced' }],
      },
      // The ServiceAccount plugin ran first: a pod that gets a token has its volume now (none: automount is off).
      matchConditions: [
        { name: 'gets-a-token', expression: `has(${VOLUMES}) && ${VOLUMES}.exists(v, v.name.startsWith(${cel(TOKEN_VOLUME_PREFIX)}) && has(v.projected))` },
        { name: 'no-token-of-its-own', expression: `!${mountsOwnToken('object.spec.containers')} && !${mountsOwnToken('object.spec.initContainers')}` },
      ],
      variables: [
        { name: 'tokenVolume', expression: TOKEN_VOLUME },
        {
          name: 'serviceEnv',
          expression: `[{'name': 'KUBERNETES_SERVICE_HOST', 'value': ${cel(host)}}, {'name': 'KUBERNETES_SERVICE_PORT', 'value': ${cel(String(port))}}, {'name': 'KUBERNETES_SERVICE_PORT_HTTPS', 'value': ${cel(String(port))}}]`,
        },
      ],
      mutations: [
        {
          // The sources list is atomic: an apply configuration may not change it, a JSON patch replaces it whole.
          // (Plain values, each dyn: a JSON patch's typed Object values inside a list crash the apiserver, v1.36.3.)
          patchType: 'JSONPatch',
          jsonPatch: {
            expression:
              `[JSONPatch{op: 'replace', path: '/spec/volumes/' + string(${VOLUMES}.map(v, v.name).indexOf(variables.tokenVolume)) + '/projected/sources', value: [` +
              `dyn({'serviceAccountToken': {'path': dyn('token'), 'expirationSeconds': dyn(${TOKEN_EXPIRATION_SECONDS})}}), ` +
              `dyn({'downwardAPI': {'items': [${item('ca.crt', CA_ANNOTATION)}, ${item('namespace', NAMESPACE_ANNOTATION)}]}})` +
              `]}]`,
          },
        },
        {
          patchType: 'ApplyConfiguration',
          applyConfiguration: {
            expression:
              `Object{` +
              `metadata: Object.metadata{annotations: {${cel(CA_ANNOTATION)}: ${cel(access.caPem)}, ${cel(NAMESPACE_ANNOTATION)}: request.namespace.substring(${PREFIX_LENGTH})}}, ` +
              `spec: Object.spec{containers: ${withServiceEnv('object.spec.containers', 'Object.spec.containers')}}}`,
          },
        },
        {
          // Init containers (sidecars among them) reach the API too; a mutation of their own, as a pod may have none.
          patchType: 'ApplyConfiguration',
          applyConfiguration: {
            expression:
              `!has(object.spec.initContainers) ? Object{} : ` +
              `Object{spec: Object.spec{initContainers: ${withServiceEnv('object.spec.initContainers', 'Object.spec.initContainers')}}}`,
          },
        },
      ],
    },
  };
}

/** The policy and its binding, for the ObjectKeeper. */
export function inClusterAccessObjects(access: InClusterAccess): KeptObject[] {
  return [
    { collection: `/apis/${ADMISSION}/mutatingadmissionpolicies`, object: inClusterAccessPolicy(access) },
    {
      collection: `/apis/${ADMISSION}/mutatingadmissionpolicybindings`,
      object: {
        apiVersion: ADMISSION,
        kind: 'MutatingAdmissionPolicyBinding',
        metadata: { name: TENANT_IN_CLUSTER_ACCESS },
        spec: { policyName: TENANT_IN_CLUSTER_ACCESS },
      },
    },
  ];
}
