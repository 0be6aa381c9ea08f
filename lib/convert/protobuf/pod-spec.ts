// Pod specs and the templates that hold them at the wire level, both directions, as rules/workloads.ts maps them:
// affinity terms' namespaces, ephemeral volume claim templates, the priority class. The request's rule, the answer's
// rule and the fast path's test of when the answer's rule has work sit side by side on the same field numbers. Never
// lets a pod name another tenant's namespaces or priority class.
import type { RuleName } from '../kinds.ts';
import type { TenantId } from '../prefix.ts';
import { namespaceToUpstream } from '../rules/names.ts';
import { priorityClassNameToUpstream, refusePodPriorityClass } from '../rules/priority-classes.ts';
import { MessageEdit, rewriteAt, type Step } from './message-edit.ts';
import { NAMESPACE_NAME_LABEL_BYTES, forceTenantEntry, labelTemplate } from './object-meta.ts';
import type { Conversion } from './conversion.ts';

// ---- pod specs and templates (k8s.io/api core/v1, apps/v1, batch/v1 generated.proto) ----

/**
 * PodSpec.affinity = 18 → Affinity.podAffinity = 2 | podAntiAffinity = 3 → requiredDuringScheduling… = 1 (repeated
 * PodAffinityTerm) | preferredDuringScheduling… = 2 (repeated WeightedPodAffinityTerm → podAffinityTerm = 2).
 */
export const AFFINITY_TERMS: readonly (readonly Step[])[] = [2, 3].flatMap((affinity) => [
  [18, affinity, 1, '*'],
  [18, affinity, 2, '*', 2],
]);
/** PodAffinityTerm: namespaces = 2 (repeated string), namespaceSelector = 4 (LabelSelector). */
export const TERM = { namespaces: 2, namespaceSelector: 4 } as const;
/** LabelSelector: matchLabels = 1 (map), matchExpressions = 2 (LabelSelectorRequirement: key = 1, values = 3). */
export const SELECTOR = { matchLabels: 1, matchExpressions: 2, key: 1, values: 3 } as const;
/**
 * PodSpec.volumes = 1 (repeated Volume) → volumeSource = 2 → VolumeSource.ephemeral = 29 →
 * EphemeralVolumeSource.volumeClaimTemplate = 1 (PersistentVolumeClaimTemplate: metadata = 1).
 */
export const EPHEMERAL_CLAIM_TEMPLATES: readonly Step[] = [1, '*', 2, 29, 1];

/** A namespace selector only ever selects the tenant's namespaces; names on `kubernetes.io/metadata.name` take the prefix. */
function namespaceSelectorToUpstreamWire(selector: Buffer, tenant: TenantId): Buffer {
  const edit = new MessageEdit(selector, 'namespaceSelector');
  const toUpstream = (namespace: string) => namespaceToUpstream(namespace, tenant);
  for (const field of edit.all(SELECTOR.matchExpressions, 'matchExpressions')) {
    edit.rewrite(field, (payload) => {
      const expression = new MessageEdit(payload, 'namespaceSelector.matchExpressions');
      const keyField = expression.single(SELECTOR.key, 'key');
      if (keyField === undefined || !expression.payload(keyField).equals(NAMESPACE_NAME_LABEL_BYTES)) return payload;
      for (const value of expression.all(SELECTOR.values, 'values')) expression.replaceString(value, toUpstream(expression.string(value, 'values')));
      return expression.finish();
    });
  }
  forceTenantEntry(edit, SELECTOR.matchLabels, 'matchLabels', tenant, toUpstream);
  return edit.finish();
}

function affinityTermToUpstream(term: Buffer, tenant: TenantId): Buffer {
  const edit = new MessageEdit(term, 'pod affinity term');
  for (const field of edit.all(TERM.namespaces, 'namespaces')) edit.replaceString(field, namespaceToUpstream(edit.string(field, 'namespaces'), tenant));
  const selector = edit.single(TERM.namespaceSelector, 'namespaceSelector');
  if (selector !== undefined) edit.rewrite(selector, (payload) => namespaceSelectorToUpstreamWire(payload, tenant));
  return edit.finish();
}

/**
 * What the JSON rules do to a pod spec: affinity terms' namespaces, ephemeral volume claim templates labelled, the
 * priority class the platform's or the tenant's own (rules/priority-classes.ts).
 */
export function podSpecToUpstream(spec: Buffer, conversion: Conversion): Buffer {
  const { tenant } = conversion;
  let result = spec;
  for (const path of AFFINITY_TERMS) result = rewriteAt(result, path, 'pod spec', (term) => affinityTermToUpstream(term, tenant));
  result = rewriteAt(result, EPHEMERAL_CLAIM_TEMPLATES, 'pod spec', (template) => labelTemplate(template, tenant, 'volumeClaimTemplate'));
  const edit = new MessageEdit(result, 'pod spec');
  const priorityClass = edit.single(PRIORITY_CLASS_NAME, 'priorityClassName');
  if (priorityClass === undefined) return result;
  const name = edit.string(priorityClass, 'priorityClassName');
  const upstream = priorityClassNameToUpstream(name, conversion);
  if (upstream === name) return result;
  edit.replaceString(priorityClass, upstream);
  return edit.finish();
}

/** Rules whose kinds hold pod templates, pod specs or claim templates (TEMPLATES). */
export const TEMPLATE_RULES: ReadonlySet<RuleName> = new Set(['pod', 'workload', 'statefulset', 'cronjob', 'podtemplate', 'claimtemplate']);

export interface ProtobufTemplates {
  readonly apiVersion: string;
  /** Paths (from the object) to each template (metadata = 1) whose children must carry the tenant label. */
  readonly labelled: readonly (readonly Step[])[];
  /** Paths to each PodSpec. */
  readonly podSpecs: readonly (readonly Step[])[];
  /** A Pod: its spec names no platform-critical priority class (rules/workloads.ts pod). */
  readonly refusesPlatformPriority?: true;
}

/** The pod template of a workload at spec = 2 → template = n; a PodTemplateSpec is metadata = 1, spec = 2. */
const workloadTemplate = (apiVersion: string, template: number): ProtobufTemplates => ({
  apiVersion,
  labelled: [[2, template]],
  podSpecs: [[2, template, 2]],
});

/** By `<group>/<kind>`: the protobuf field paths of the JSON paths in rules/workloads.ts. */
export const TEMPLATES: ReadonlyMap<string, ProtobufTemplates> = new Map([
  ['/Pod', { apiVersion: 'v1', labelled: [], podSpecs: [[2]], refusesPlatformPriority: true }],
  ['/ReplicationController', workloadTemplate('v1', 3)],
  ['/PodTemplate', { apiVersion: 'v1', labelled: [[2]], podSpecs: [[2, 2]] }],
  ['apps/Deployment', workloadTemplate('apps/v1', 3)],
  ['apps/ReplicaSet', workloadTemplate('apps/v1', 3)],
  ['apps/DaemonSet', workloadTemplate('apps/v1', 2)],
  // StatefulSetSpec.volumeClaimTemplates = 4: repeated PersistentVolumeClaim (metadata = 1).
  [
    'apps/StatefulSet',
    {
      apiVersion: 'apps/v1',
      labelled: [
        [2, 3],
        [2, 4, '*'],
      ],
      podSpecs: [[2, 3, 2]],
    },
  ],
  ['batch/Job', workloadTemplate('batch/v1', 6)],
  // CronJobSpec.jobTemplate = 5: JobTemplateSpec (metadata = 1, spec = 2 → JobSpec.template = 6).
  [
    'batch/CronJob',
    {
      apiVersion: 'batch/v1',
      labelled: [
        [2, 5],
        [2, 5, 2, 6],
      ],
      podSpecs: [[2, 5, 2, 6, 2]],
    },
  ],
  // ResourceClaimTemplate spec = 2: ResourceClaimTemplateSpec (metadata = 1, spec = 2 ResourceClaimSpec).
  ['resource.k8s.io/ResourceClaimTemplate', { apiVersion: 'resource.k8s.io/v1', labelled: [[2]], podSpecs: [] }],
]);

/** Pod.spec = 2 → PodSpec.priorityClassName = 24. */
const POD_SPEC = 2;
const PRIORITY_CLASS_NAME = 24;

function refusePlatformPriorityWire(pod: Buffer, conversion: Conversion): void {
  const object = new MessageEdit(pod, 'pod');
  const specField = object.single(POD_SPEC, 'spec');
  if (specField === undefined) return;
  const spec = new MessageEdit(object.payload(specField), 'pod spec');
  const name = spec.single(PRIORITY_CLASS_NAME, 'priorityClassName');
  if (name !== undefined) refusePodPriorityClass(spec.string(name, 'priorityClassName'), conversion);
}

export function templatesToUpstream(object: Buffer, templates: ProtobufTemplates, conversion: Conversion): Buffer {
  const { tenant } = conversion;
  if (templates.refusesPlatformPriority === true) refusePlatformPriorityWire(object, conversion);
  let result = object;
  for (const path of templates.labelled) result = rewriteAt(result, path, 'object', (template) => labelTemplate(template, tenant, 'template'));
  for (const path of templates.podSpecs) result = rewriteAt(result, path, 'object', (spec) => podSpecToUpstream(spec, conversion));
  return result;
}
