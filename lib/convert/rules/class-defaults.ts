// A tenant's default classes (Tenant spec.<kind>Classes.default), filled in where its object names none, as the
// apiserver's admission fills the platform's: a pod's priority and runtime class, a claim's storage class, an
// Ingress's class. Templates get them too: the pods and claims controllers make from them are never defaulted by
// tenantgate, and the upstream's admission would give them the platform's default. Only whole objects (create,
// update, apply), never a patch: a field a patch leaves out is not a field the tenant left unset.
// Never replaces a class the tenant named, nor an explicit empty one (a claim's `""` means no class).
import type { KindRow, RuleName } from '../kinds.ts';
import { eachObjectAt, objectAt } from './json.ts';
import type { Json } from './rule.ts';
import { EPHEMERAL_CLAIM_TEMPLATES, TEMPLATES_OF_RULE, type Templates } from './workloads.ts';

/** The tenant's default class of a class kind (`priorityclasses`...), or undefined: the upstream's own default. */
export type DefaultClass = (resource: string) => string | undefined;

/** The annotation an Ingress named its class by before ingressClassName: the apiserver defaults neither when it is set. */
export const INGRESS_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';

/** PVC specs of the kinds that carry them (besides the ephemeral volumes of pod specs), by rule. */
const CLAIM_SPECS: { readonly [rule in RuleName]?: readonly (readonly string[])[] } = {
  persistentvolumeclaim: [['spec']],
  statefulset: [['spec', 'volumeClaimTemplates', '*', 'spec']],
};

const EPHEMERAL_CLAIM_SPECS = [...EPHEMERAL_CLAIM_TEMPLATES, 'spec'];
const TEMPLATES_BY_RULE: { readonly [rule in RuleName]?: Templates } = TEMPLATES_OF_RULE;

/** Sets `field` to the default when unset (absent or null; `orEmpty`: '' too, for a field that is no pointer). */
function fill(obj: Json, field: string, value: string | undefined, orEmpty: boolean): void {
  if (value === undefined) return;
  const current = obj[field];
  if (current === undefined || current === null || (orEmpty && current === '')) obj[field] = value;
}

function claimSpecDefaults(spec: Json, defaultClass: DefaultClass): void {
  fill(spec, 'storageClassName', defaultClass('storageclasses'), false);
}

function podSpecDefaults(spec: Json, defaultClass: DefaultClass): void {
  // priorityClassName is a plain string: '' is unset, as the Priority admission plugin reads it.
  fill(spec, 'priorityClassName', defaultClass('priorityclasses'), true);
  fill(spec, 'runtimeClassName', defaultClass('runtimeclasses'), false);
  eachObjectAt(spec, EPHEMERAL_CLAIM_SPECS, (claim) => claimSpecDefaults(claim, defaultClass));
}

/** Fills the tenant's default classes into a whole object of `row` it sends (tenant form or upstream form alike). */
export function classDefaultsToUpstream(obj: Json, row: KindRow, defaultClass: DefaultClass): void {
  for (const path of TEMPLATES_BY_RULE[row.rule]?.podSpecs ?? []) eachObjectAt(obj, path, (spec) => podSpecDefaults(spec, defaultClass));
  for (const path of CLAIM_SPECS[row.rule] ?? []) eachObjectAt(obj, path, (spec) => claimSpecDefaults(spec, defaultClass));
  if (row.group === 'networking.k8s.io' && row.resource === 'ingresses') {
    const annotations = objectAt(objectAt(obj, 'metadata') ?? {}, 'annotations');
    const spec = objectAt(obj, 'spec');
    if (spec !== undefined && annotations?.[INGRESS_CLASS_ANNOTATION] === undefined) fill(spec, 'ingressClassName', defaultClass('ingressclasses'), false);
  }
}
