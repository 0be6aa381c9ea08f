// PersistentVolumes are the tenant's cluster-scoped objects: the claim they are bound to and the secrets their
// drivers read live in the tenant's namespaces. A PVC names its PV, prefixed, except the `pvc-<uid>` names dynamic
// provisioners give the volumes they make (those PVs are not under the tenant's prefix and pass through).
import { toTenantName, toUpstreamName } from '../prefix.ts';
import { mapStringAt } from './json.ts';
import { namespaceToTenant, namespaceToUpstream } from './names.ts';
import { objectReferencesRule } from './references.ts';
import type { KindRule } from './rule.ts';

/** Every namespace a PV's volume source names (secret references of CSI and in-tree sources). */
const PV_NAMESPACE_FIELDS: readonly (readonly string[])[] = [
  ...['controllerPublishSecretRef', 'nodeStageSecretRef', 'nodePublishSecretRef', 'controllerExpandSecretRef', 'nodeExpandSecretRef'].map((ref) => [
    'spec',
    'csi',
    ref,
    'namespace',
  ]),
  ...['cephfs', 'rbd', 'iscsi', 'flexVolume', 'scaleIO', 'storageos'].map((source) => ['spec', source, 'secretRef', 'namespace']),
  ['spec', 'azureFile', 'secretNamespace'],
  ['spec', 'glusterfs', 'endpointsNamespace'],
];

const claimRef = objectReferencesRule([['spec', 'claimRef']]);

export const persistentVolume: KindRule = {
  toUpstream(obj, ctx) {
    claimRef.toUpstream(obj, ctx);
    for (const path of PV_NAMESPACE_FIELDS) mapStringAt(obj, path, (namespace) => namespaceToUpstream(namespace, ctx.tenant));
    return obj;
  },
  toTenant(obj, ctx) {
    if (claimRef.toTenant(obj, ctx) === null) return null;
    for (const path of PV_NAMESPACE_FIELDS) {
      if (!mapStringAt(obj, path, (namespace) => namespaceToTenant(namespace, ctx.tenant))) return null;
    }
    return obj;
  },
};

/** The names external-provisioner and in-tree provisioners give dynamically provisioned PVs. */
export const PROVISIONED_VOLUME_NAME = /^pvc-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const VOLUME_NAME = ['spec', 'volumeName'];
const DATA_SOURCE_NAMESPACE = ['spec', 'dataSourceRef', 'namespace'];

export const persistentVolumeClaim: KindRule = {
  toUpstream(obj, ctx) {
    mapStringAt(obj, VOLUME_NAME, (name) => (PROVISIONED_VOLUME_NAME.test(name) ? name : toUpstreamName(name, ctx.tenant)));
    mapStringAt(obj, DATA_SOURCE_NAMESPACE, (namespace) => namespaceToUpstream(namespace, ctx.tenant));
    return obj;
  },
  toTenant(obj, ctx) {
    const mine =
      mapStringAt(obj, VOLUME_NAME, (name) => (PROVISIONED_VOLUME_NAME.test(name) ? name : toTenantName(name, ctx.tenant))) &&
      mapStringAt(obj, DATA_SOURCE_NAMESPACE, (namespace) => namespaceToTenant(namespace, ctx.tenant));
    return mine ? obj : null;
  },
};
