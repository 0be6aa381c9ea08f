// Which cached objects a tenant's list or watch selects: its namespace, label selector and field selector, judged on
// the tenant's view of each object as the apiserver judges them on its own. Never guesses: a field the cache does not
// keep, or a selector it cannot parse, makes the request go upstream, where the apiserver answers it.
import { TENANT_LABEL, type TenantId } from '../convert/prefix.ts';
import { labelsMatch, parseFieldSelector, parseLabelSelector, type FieldSelectorTerm, type LabelRequirement } from '../convert/selectors.ts';

/** The selectable fields of one object (tenant names), beyond metadata.name and metadata.namespace. */
export type ObjectFields = Readonly<Record<string, string>> | null;

/** Fields the apiserver's field selectors support per resource (its GetAttrs), as the cache reads them off an object. */
const FIELDS_OF: Readonly<Record<string, Readonly<Record<string, (o: any) => unknown>>>> = {
  '/pods': {
    'spec.nodeName': (o) => o.spec?.nodeName ?? '',
    'spec.restartPolicy': (o) => o.spec?.restartPolicy ?? '',
    'spec.schedulerName': (o) => o.spec?.schedulerName ?? '',
    'spec.serviceAccountName': (o) => o.spec?.serviceAccountName ?? '',
    'spec.hostNetwork': (o) => String(o.spec?.hostNetwork === true),
    'status.phase': (o) => o.status?.phase ?? '',
    'status.podIP': (o) => o.status?.podIPs?.[0]?.ip ?? o.status?.podIP ?? '',
    'status.nominatedNodeName': (o) => o.status?.nominatedNodeName ?? '',
  },
  '/secrets': { type: (o) => o.type ?? '' },
  '/namespaces': { 'status.phase': (o) => o.status?.phase ?? '' },
  'apps/replicasets': { 'status.replicas': (o) => String(o.status?.replicas ?? 0) },
  'batch/jobs': { 'status.successful': (o) => String(o.status?.successful ?? 0) },
  '/events': {
    'involvedObject.kind': (o) => o.involvedObject?.kind ?? '',
    'involvedObject.namespace': (o) => o.involvedObject?.namespace ?? '',
    'involvedObject.name': (o) => o.involvedObject?.name ?? '',
    'involvedObject.uid': (o) => o.involvedObject?.uid ?? '',
    'involvedObject.apiVersion': (o) => o.involvedObject?.apiVersion ?? '',
    'involvedObject.resourceVersion': (o) => o.involvedObject?.resourceVersion ?? '',
    'involvedObject.fieldPath': (o) => o.involvedObject?.fieldPath ?? '',
    reason: (o) => o.reason ?? '',
    reportingComponent: (o) => o.reportingComponent ?? '',
    source: (o) => o.source?.component ?? '',
    type: (o) => o.type ?? '',
  },
};

/** The selectable fields of `view` (the tenant's view of an object of `group`/`resource`), kept with it in the cache. */
export function fieldsOf(group: string, resource: string, view: any): ObjectFields {
  const readers = FIELDS_OF[`${group}/${resource}`];
  if (readers === undefined) return null;
  const fields: Record<string, string> = {};
  for (const field in readers) {
    const value = readers[field]!(view);
    fields[field] = typeof value === 'string' ? value : String(value);
  }
  return fields;
}

/** Whether an upstream namespace is a tenant's: labelled for it ('member'), or not ('foreign'), or not seen yet. */
export interface NamespaceMembership {
  membership(tenant: TenantId, namespace: string): 'member' | 'foreign' | 'unknown';
}

/** What a request selects, parsed once when it starts. */
export interface Selection {
  /** The tenant's namespace, or null: all of them (and cluster-scoped kinds). */
  readonly namespace: string | null;
  /**
   * Across all namespaces of a namespaced kind: the tenant, and who knows its namespaces. A namespace with the
   * tenant's prefix is the tenant's only when labelled for it, as the upstream path's lists decide.
   */
  readonly across: { readonly tenant: TenantId; readonly namespaces: NamespaceMembership } | null;
  readonly labels: readonly LabelRequirement[];
  readonly fields: readonly FieldSelectorTerm[];
  /** True when neither selector was given (lists then report remainingItemCount). */
  readonly everything: boolean;
  /** The namespace and selectors as asked: a continue token serves only the list it was made for. */
  readonly key: string;
}

/** What a cached object offers a selection. */
export interface Selectable {
  readonly namespace: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>> | undefined;
  readonly fields: ObjectFields;
}

/**
 * The selection of a request (tenant names), or null when the cache cannot judge it exactly: a selector that does not
 * parse (the apiserver answers that one with its own 400), one on the tenant label, or a field the resource's objects do not offer here.
 */
export function selectionOf(
  group: string,
  resource: string,
  namespace: string | null,
  labelSelector: string | null,
  fieldSelector: string | null,
  namespaced = true,
  across: Selection['across'] = null,
): Selection | null {
  let labels: LabelRequirement[] = [];
  let fields: FieldSelectorTerm[] = [];
  try {
    if (labelSelector !== null && labelSelector !== '') labels = parseLabelSelector(labelSelector);
    if (fieldSelector !== null && fieldSelector !== '') fields = parseFieldSelector(fieldSelector);
  } catch {
    return null;
  }
  // The tenant label is tenantgate's: the upstream path refuses a selector on it (400), and says why.
  if (labels.some((requirement) => requirement.key === TENANT_LABEL)) return null;
  const readers = FIELDS_OF[`${group}/${resource}`];
  for (const term of fields) {
    // (metadata.namespace of a cluster-scoped kind: the apiserver's 400 "field label not supported".)
    if (term.field === 'metadata.namespace' ? !namespaced : term.field !== 'metadata.name' && readers?.[term.field] === undefined) return null;
  }
  const key = JSON.stringify([namespace, labelSelector ?? '', fieldSelector ?? '']);
  return { namespace, across, labels, fields, everything: labels.length === 0 && fields.length === 0, key };
}

function fieldValue(object: Selectable, field: string): string {
  if (field === 'metadata.name') return object.name;
  if (field === 'metadata.namespace') return object.namespace;
  return object.fields?.[field] ?? '';
}

/** Whether `object` (of the selection's tenant) is selected. */
export function selects(selection: Selection, object: Selectable): boolean {
  if (selection.namespace !== null && object.namespace !== selection.namespace) return false;
  const across = selection.across;
  if (across !== null && across.namespaces.membership(across.tenant, object.namespace) !== 'member') return false;
  if (selection.everything) return true;
  for (const term of selection.fields) {
    const equal = fieldValue(object, term.field) === term.value;
    if (equal === (term.operator === '!=')) return false;
  }
  return selection.labels.length === 0 || labelsMatch(selection.labels, object.labels);
}
