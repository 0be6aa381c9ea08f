// Field numbers by name, taken from the generated schema (k8s-proto-schema.ts, itself checked against k8s.io/api's
// generated.proto by the unit tests): the numbers of ObjectMeta, PodSpec and the messages the hand-written rules
// walk, written nowhere else. Never guesses: a message or field the schema lacks throws when this module loads.
import { K8S_PROTO_SCHEMA } from './k8s-proto-schema.ts';

const META_V1 = 'k8s.io.apimachinery.pkg.apis.meta.v1';
const CORE_V1 = 'k8s.io.api.core.v1';

/** Every table taken here, by message: what the unit test checks against generated.proto. */
export const TAKEN: { readonly message: string; readonly numbers: Readonly<Record<string, number>> }[] = [];

/** The numbers of `names` in `message` of the generated schema, by name (an inlined member's name is its .proto name). */
export function fieldNumbers<const Name extends string>(message: string, names: readonly Name[]): { readonly [name in Name]: number } {
  const fields = K8S_PROTO_SCHEMA.messages[message];
  if (fields === undefined) throw new Error(`the generated protobuf schema has no message ${message}`);
  const numbers = {} as Record<Name, number>;
  for (const name of names) {
    const field = fields.find(([json]) => json === name);
    if (field === undefined) throw new Error(`the generated protobuf schema has no field ${message}.${name}`);
    numbers[name] = field[1];
  }
  TAKEN.push({ message, numbers });
  return numbers;
}

// ---- meta/v1 ----

export const OBJECT_META = fieldNumbers(`${META_V1}.ObjectMeta`, [
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
]);
export const OWNER_REFERENCE = fieldNumbers(`${META_V1}.OwnerReference`, ['kind', 'name', 'uid', 'apiVersion', 'controller', 'blockOwnerDeletion']);
export const MANAGED_FIELDS_ENTRY = fieldNumbers(`${META_V1}.ManagedFieldsEntry`, [
  'manager',
  'operation',
  'apiVersion',
  'time',
  'fieldsType',
  'fieldsV1',
  'subresource',
]);
export const SELECTOR = fieldNumbers(`${META_V1}.LabelSelector`, ['matchLabels', 'matchExpressions']);
export const SELECTOR_REQUIREMENT = fieldNumbers(`${META_V1}.LabelSelectorRequirement`, ['key', 'values']);

// ---- core/v1: the pod spec fields the rules of rules/workloads.ts map ----

export const POD = fieldNumbers(`${CORE_V1}.Pod`, ['spec']);
export const POD_SPEC = fieldNumbers(`${CORE_V1}.PodSpec`, ['volumes', 'affinity', 'priorityClassName', 'runtimeClassName']);
export const VOLUME = fieldNumbers(`${CORE_V1}.Volume`, ['volumeSource']);
export const VOLUME_SOURCE = fieldNumbers(`${CORE_V1}.VolumeSource`, ['ephemeral']);
export const EPHEMERAL_VOLUME_SOURCE = fieldNumbers(`${CORE_V1}.EphemeralVolumeSource`, ['volumeClaimTemplate']);
export const AFFINITY = fieldNumbers(`${CORE_V1}.Affinity`, ['podAffinity', 'podAntiAffinity']);
/** PodAffinity's and PodAntiAffinity's terms (the two messages number them alike: checked by the unit test). */
export const POD_AFFINITY = fieldNumbers(`${CORE_V1}.PodAffinity`, [
  'requiredDuringSchedulingIgnoredDuringExecution',
  'preferredDuringSchedulingIgnoredDuringExecution',
]);
export const POD_ANTI_AFFINITY = fieldNumbers(`${CORE_V1}.PodAntiAffinity`, [
  'requiredDuringSchedulingIgnoredDuringExecution',
  'preferredDuringSchedulingIgnoredDuringExecution',
]);
export const WEIGHTED_POD_AFFINITY_TERM = fieldNumbers(`${CORE_V1}.WeightedPodAffinityTerm`, ['podAffinityTerm']);
export const POD_AFFINITY_TERM = fieldNumbers(`${CORE_V1}.PodAffinityTerm`, ['namespaces', 'namespaceSelector']);

// ---- the fields the tenant's default classes fill (rules/class-defaults.ts) ----

export const PERSISTENT_VOLUME_CLAIM_SPEC = fieldNumbers(`${CORE_V1}.PersistentVolumeClaimSpec`, ['storageClassName']);
export const INGRESS = fieldNumbers('k8s.io.api.networking.v1.Ingress', ['spec']);
export const INGRESS_SPEC = fieldNumbers('k8s.io.api.networking.v1.IngressSpec', ['ingressClassName']);
