// Pod specs and the templates that hold them at the wire level, both directions, as rules/workloads.ts maps them:
// affinity terms' namespaces, ephemeral volume claim templates, the priority class. The request's rule, the answer's
// rule and the fast path's test of when the answer's rule has work sit side by side on the same field numbers. Never
// lets a pod name another tenant's namespaces or priority class.
import { priorityClassNameToTenant, priorityClassNameToUpstream, refusePodPriorityClass } from '../rules/priority-classes.ts';
import { KINDS, protobufApiVersion, type ProtobufTemplatePaths, type RuleName } from '../kinds.ts';
import type { TenantId } from '../prefix.ts';
import { ANOMALY, FieldScan, ForwardSearch, isAsciiRange, rangeIncludes } from './splice.ts';
import { LENGTH_DELIMITED } from './wire.ts';
import { tagBytes } from './writer.ts';
import { namespaceSelectorToTenant } from '../rules/label-selectors.ts';
import { namespaceToTenant, namespaceToUpstream } from '../rules/names.ts';
import { MessageEdit, rewriteAt, type Step } from './message-edit.ts';
import { readSkeleton, writeSkeleton } from './skeleton.ts';
import { LABEL_SELECTOR } from './kind-schemas.ts';
import { NAMESPACE_NAME_LABEL_BYTES, forceTenantEntry, labelTemplate, removeTenantEntryWire } from './object-meta.ts';
import { type Conversion, notTheTenants } from './conversion.ts';
import {
  AFFINITY,
  EPHEMERAL_VOLUME_SOURCE,
  OBJECT_META,
  POD,
  POD_AFFINITY,
  POD_AFFINITY_TERM,
  POD_ANTI_AFFINITY,
  POD_SPEC,
  SELECTOR,
  SELECTOR_REQUIREMENT,
  VOLUME,
  VOLUME_SOURCE,
  WEIGHTED_POD_AFFINITY_TERM,
} from './field-numbers.ts';

// ---- the fields, named once (their numbers: field-numbers.ts, from the generated schema) ----

/** The PodAffinityTerms of an Affinity's podAffinity or podAntiAffinity: required ones, and preferred ones' own. */
const affinityTerms = (affinity: number, terms: typeof POD_AFFINITY): Step[][] => [
  [affinity, terms.requiredDuringSchedulingIgnoredDuringExecution, '*'],
  [affinity, terms.preferredDuringSchedulingIgnoredDuringExecution, '*', WEIGHTED_POD_AFFINITY_TERM.podAffinityTerm],
];
/** Paths below PodSpec.affinity to every PodAffinityTerm (the spec is parsed once, not once per path). */
const AFFINITY_TERMS_IN_AFFINITY: readonly (readonly Step[])[] = [
  ...affinityTerms(AFFINITY.podAffinity, POD_AFFINITY),
  ...affinityTerms(AFFINITY.podAntiAffinity, POD_ANTI_AFFINITY),
];
/** The same from the pod spec. */
const AFFINITY_TERMS: readonly (readonly Step[])[] = AFFINITY_TERMS_IN_AFFINITY.map((path) => [POD_SPEC.affinity, ...path]);
/** Below one Volume: its (inline) source's ephemeral volume's claim template (PersistentVolumeClaimTemplate: metadata = 1, spec = 2). */
const EPHEMERAL_CLAIM_TEMPLATE_IN_VOLUME: readonly Step[] = [VOLUME.volumeSource, VOLUME_SOURCE.ephemeral, EPHEMERAL_VOLUME_SOURCE.volumeClaimTemplate];
/** The same from the pod spec, for every volume. */
export const EPHEMERAL_CLAIM_TEMPLATES: readonly Step[] = [POD_SPEC.volumes, '*', ...EPHEMERAL_CLAIM_TEMPLATE_IN_VOLUME];

/**
 * The tags of PodSpec.affinity, VolumeSource.ephemeral and PodSpec.priorityClassName: a spec without these bytes anywhere
 * in it has none of the fields, and is left as it is.
 */
const AFFINITY_TAG = tagBytes(POD_SPEC.affinity, LENGTH_DELIMITED);
const EPHEMERAL_TAG = tagBytes(VOLUME_SOURCE.ephemeral, LENGTH_DELIMITED);
const PRIORITY_CLASS_TAG = tagBytes(POD_SPEC.priorityClassName, LENGTH_DELIMITED);
/**
 * The same tags searched in the fast path's buffers (their first bytes, not ASCII, are rare: see ForwardSearch). One
 * list, so forgetSearchedBuffer forgets every search the test reads.
 */
const TAG_SEARCHES = [AFFINITY_TAG, EPHEMERAL_TAG, PRIORITY_CLASS_TAG].map((tag) => new ForwardSearch(tag));

// ---- toward the upstream ----

/** A namespace selector only ever selects the tenant's namespaces; names on `kubernetes.io/metadata.name` take the prefix. */
function namespaceSelectorToUpstreamWire(selector: Buffer, tenant: TenantId): Buffer {
  const edit = new MessageEdit(selector, 'namespaceSelector');
  const toUpstream = (namespace: string) => namespaceToUpstream(namespace, tenant);
  for (const field of edit.all(SELECTOR.matchExpressions, 'matchExpressions')) {
    edit.rewrite(field, (payload) => {
      const expression = new MessageEdit(payload, 'namespaceSelector.matchExpressions');
      const keyField = expression.single(SELECTOR_REQUIREMENT.key, 'key');
      if (keyField === undefined || !expression.payload(keyField).equals(NAMESPACE_NAME_LABEL_BYTES)) return payload;
      for (const value of expression.all(SELECTOR_REQUIREMENT.values, 'values'))
        expression.replaceString(value, toUpstream(expression.string(value, 'values')));
      return expression.finish();
    });
  }
  forceTenantEntry(edit, SELECTOR.matchLabels, 'matchLabels', tenant, toUpstream);
  return edit.finish();
}

function affinityTermToUpstream(term: Buffer, tenant: TenantId): Buffer {
  const edit = new MessageEdit(term, 'pod affinity term');
  for (const field of edit.all(POD_AFFINITY_TERM.namespaces, 'namespaces'))
    edit.replaceString(field, namespaceToUpstream(edit.string(field, 'namespaces'), tenant));
  const selector = edit.single(POD_AFFINITY_TERM.namespaceSelector, 'namespaceSelector');
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
  const priorityClass = edit.single(POD_SPEC.priorityClassName, 'priorityClassName');
  if (priorityClass === undefined) return result;
  const name = edit.string(priorityClass, 'priorityClassName');
  const upstream = priorityClassNameToUpstream(name, conversion);
  if (upstream === name) return result;
  edit.replaceString(priorityClass, upstream);
  return edit.finish();
}

/** Rules whose kinds hold pod templates, pod specs or claim templates (KindRow.protobuf.templates). */
export const TEMPLATE_RULES: ReadonlySet<RuleName> = new Set(['pod', 'workload', 'statefulset', 'cronjob', 'podtemplate', 'claimtemplate']);

/** A kind's templates (KindRow.protobuf) with the one version they are known in: what the unit test checks. */
export interface ProtobufTemplates extends ProtobufTemplatePaths {
  readonly apiVersion: string;
}

/** By `<group>/<kind>`: the templates column of the table of kinds, for the unit test's check against generated.proto. */
export const TEMPLATES: ReadonlyMap<string, ProtobufTemplates> = new Map(
  KINDS.flatMap((row) =>
    row.protobuf?.templates === undefined ? [] : [[`${row.group}/${row.kind}`, { apiVersion: protobufApiVersion(row), ...row.protobuf.templates }] as const],
  ),
);

function refusePlatformPriorityWire(pod: Buffer, conversion: Conversion): void {
  const object = new MessageEdit(pod, 'pod');
  const specField = object.single(POD.spec, 'spec');
  if (specField === undefined) return;
  const spec = new MessageEdit(object.payload(specField), 'pod spec');
  const name = spec.single(POD_SPEC.priorityClassName, 'priorityClassName');
  if (name !== undefined) refusePodPriorityClass(spec.string(name, 'priorityClassName'), conversion);
}

export function templatesToUpstream(object: Buffer, templates: ProtobufTemplatePaths, conversion: Conversion): Buffer {
  const { tenant } = conversion;
  if (templates.refusesPlatformPriority === true) refusePlatformPriorityWire(object, conversion);
  let result = object;
  for (const path of templates.labelled) result = rewriteAt(result, path, 'object', (template) => labelTemplate(template, tenant, 'template'));
  for (const path of templates.podSpecs) result = rewriteAt(result, path, 'object', (spec) => podSpecToUpstream(spec, conversion));
  return result;
}

// ---- toward the tenant ----

/** Removes the tenant label from a template's metadata (metadata = 1), and the metadata once nothing else is in it. */
export function unlabelTemplate(template: Buffer, tenant: TenantId, what: string): Buffer {
  const edit = new MessageEdit(template, what);
  const meta = edit.single(1, 'metadata');
  if (meta === undefined) return template;
  const metaEdit = new MessageEdit(edit.payload(meta), `${what}.metadata`);
  removeTenantEntryWire(metaEdit, OBJECT_META.labels, 'labels', tenant);
  const rewritten = metaEdit.finish();
  if (rewritten.length === 0) edit.remove(meta);
  else if (rewritten !== metaEdit.bytes) edit.replace(meta, rewritten);
  return edit.finish();
}

function namespaceSelectorToTenantWire(selector: Buffer, tenant: TenantId): Buffer {
  const json = readSkeleton(selector, LABEL_SELECTOR, 'namespaceSelector');
  if (!namespaceSelectorToTenant(json, tenant)) notTheTenants();
  return writeSkeleton(selector, LABEL_SELECTOR, json, 'namespaceSelector');
}

function affinityTermToTenant(term: Buffer, tenant: TenantId): Buffer {
  const edit = new MessageEdit(term, 'pod affinity term');
  for (const field of edit.all(POD_AFFINITY_TERM.namespaces, 'namespaces')) {
    const namespace = edit.string(field, 'namespaces');
    const mine = namespaceToTenant(namespace, tenant) ?? notTheTenants();
    if (mine !== namespace) edit.replaceString(field, mine);
  }
  const selector = edit.single(POD_AFFINITY_TERM.namespaceSelector, 'namespaceSelector');
  if (selector !== undefined) edit.rewrite(selector, (payload) => namespaceSelectorToTenantWire(payload, tenant));
  return edit.finish();
}

function podSpecToTenant(spec: Buffer, tenant: TenantId): Buffer {
  // Most pods have none of them: their spec (containers and all) is not parsed at all.
  if (!spec.includes(AFFINITY_TAG) && !spec.includes(EPHEMERAL_TAG) && !spec.includes(PRIORITY_CLASS_TAG)) return spec;
  const edit = new MessageEdit(spec, 'pod spec');
  // The tenant's own priority class (rules/priority-classes.ts) without its prefix; the platform's as it is.
  const priorityClass = edit.single(POD_SPEC.priorityClassName, 'priorityClassName');
  if (priorityClass !== undefined) {
    const name = edit.string(priorityClass, 'priorityClassName');
    const mine = priorityClassNameToTenant(name, tenant);
    if (mine !== name) edit.replaceString(priorityClass, mine);
  }
  const affinity = edit.single(POD_SPEC.affinity, 'affinity');
  if (affinity !== undefined) {
    edit.rewrite(affinity, (payload) => {
      let result = payload;
      for (const path of AFFINITY_TERMS_IN_AFFINITY) result = rewriteAt(result, path, 'pod spec', (term) => affinityTermToTenant(term, tenant));
      return result;
    });
  }
  for (const volume of edit.all(POD_SPEC.volumes, 'volumes')) {
    if (!edit.payload(volume).includes(EPHEMERAL_TAG)) continue; // no VolumeSource.ephemeral in it
    edit.rewrite(volume, (payload) =>
      rewriteAt(payload, EPHEMERAL_CLAIM_TEMPLATE_IN_VOLUME, 'pod spec', (template) => unlabelTemplate(template, tenant, 'volumeClaimTemplate')),
    );
  }
  return edit.finish();
}

/** The templates and pod specs of `templates` in the object's field 2 (every path starts there). */
export function templatesToTenant(spec: Buffer, templates: ProtobufTemplatePaths, tenant: TenantId): Buffer {
  let result = spec;
  for (const path of templates.labelled) result = rewriteAt(result, path.slice(1), 'object', (template) => unlabelTemplate(template, tenant, 'template'));
  for (const path of templates.podSpecs) result = rewriteAt(result, path.slice(1), 'object', (podSpec) => podSpecToTenant(podSpec, tenant));
  return result;
}

// ---- the fast path's test (fast-view.ts): when has the answer's rule work to do ----

const SPEC_FIELDS = new FieldScan();
const VOLUME_FIELDS = new FieldScan();
const VOLUME_SOURCE_FIELDS = new FieldScan();

/** Forgets the buffer the searches last read: call before its bytes may change, or to let it go. */
export function forgetSearchedBuffer(): void {
  for (const search of TAG_SEARCHES) search.forget();
}

/**
 * The fast path's test (fast-view.ts): whether a pod spec has an affinity, a volume with an ephemeral source or a
 * priority class naming the tenant, what podSpecToTenant rewrites, or is read differently
 * by it: then the careful path converts it.
 */
export function podSpecNeedsCare(bytes: Buffer, from: number, to: number, tenant: Buffer): boolean {
  // podSpecToTenant's own test first: a spec without any of the tags' bytes is left as it is. One that has them
  // (a length of 146 or 234 will do) is walked: most are still left as they are.
  for (const search of TAG_SEARCHES) if (search.indexIn(bytes, from, to) !== -1) return podSpecFieldsNeedCare(bytes, from, to, tenant);
  return false;
}

/** podSpecNeedsCare once the spec has one of the tags: its fields read. */
function podSpecFieldsNeedCare(bytes: Buffer, from: number, to: number, tenant: Buffer): boolean {
  const spec = SPEC_FIELDS;
  if (!spec.scan(bytes, from, to) || spec.single(POD_SPEC.affinity) !== -1 || !spec.allDelimited(POD_SPEC.volumes)) return true;
  // A priority class of the tenant's own (`<id>-<name>`), or one not read as ASCII.
  const priorityClass = spec.single(POD_SPEC.priorityClassName);
  if (priorityClass === ANOMALY) return true;
  if (priorityClass >= 0) {
    const nameFrom = spec.valueStart[priorityClass]!;
    const nameTo = spec.end[priorityClass]!;
    if (!isAsciiRange(bytes, nameFrom, nameTo) || rangeIncludes(bytes, tenant, nameFrom, nameTo)) return true;
  }
  const volume = VOLUME_FIELDS;
  for (let i = 0; i < spec.count; i++) {
    if (spec.number[i] !== POD_SPEC.volumes) continue;
    if (!volume.scan(bytes, spec.valueStart[i]!, spec.end[i]!)) return true;
    const source = volume.single(VOLUME.volumeSource);
    if (source === ANOMALY) return true;
    if (source < 0) continue;
    if (!VOLUME_SOURCE_FIELDS.scan(bytes, volume.valueStart[source]!, volume.end[source]!) || VOLUME_SOURCE_FIELDS.single(VOLUME_SOURCE.ephemeral) !== -1)
      return true;
  }
  return false;
}
