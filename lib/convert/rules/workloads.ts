// Pods and everything that stamps out pods or claims from a template. The tenant label is forced into each template's
// metadata so controller-made children (ReplicaSets, Pods, Jobs, ControllerRevisions, PVCs, ResourceClaims) carry it;
// pod affinity terms name namespaces (prefixed) and select namespaces (only the tenant's).
// serviceAccountName, nodeName and runtimeClassName pass through (the last names a shared kind); priorityClassName
// names the platform's class or the tenant's own (rules/priority-classes.ts; a pod's never one of the platform's
// critical ones: rules/platform-classes.ts).
import type { TenantId } from '../prefix.ts';
import { forceTenantLabel, removeTenantLabel } from './labels.ts';
import { namespaceSelectorToTenant, namespaceSelectorToUpstream } from './label-selectors.ts';
import { eachObjectAt, ensureObject, everyObjectAt, mapStringsAt, objectAt } from './json.ts';
import { namespaceToTenant, namespaceToUpstream } from './names.ts';
import { podPriorityClassToTenant, podPriorityClassToUpstream, refusePodPriorityClass } from './priority-classes.ts';
import type { RuleName } from '../kinds.ts';
import type { ConvertContext, Json, KindRule } from './rule.ts';

/** Pod affinity terms, relative to a pod spec. */
const AFFINITY_TERMS: readonly (readonly string[])[] = ['podAffinity', 'podAntiAffinity'].flatMap((affinity) => [
  ['affinity', affinity, 'requiredDuringSchedulingIgnoredDuringExecution', '*'],
  ['affinity', affinity, 'preferredDuringSchedulingIgnoredDuringExecution', '*', 'podAffinityTerm'],
]);
/** Templates of PVCs the ephemeral volume controller creates, relative to a pod spec. */
export const EPHEMERAL_CLAIM_TEMPLATES = ['volumes', '*', 'ephemeral', 'volumeClaimTemplate'];

/** Forces the tenant label into a template's metadata, creating it: a Job's template may come without any. */
function labelTemplate(template: Json, tenant: TenantId): void {
  forceTenantLabel(ensureObject(template, 'metadata'), tenant);
}

/** Removes the tenant label from a template's metadata, and the metadata if nothing else was in it. */
function unlabelTemplate(template: Json, tenant: TenantId): boolean {
  const metadata = objectAt(template, 'metadata');
  if (metadata === undefined) return true;
  if (!removeTenantLabel(metadata, tenant)) return false;
  for (const _ in metadata) return true;
  delete template.metadata;
  return true;
}

export function podSpecToUpstream(spec: Json, ctx: ConvertContext): void {
  const { tenant } = ctx;
  for (const path of AFFINITY_TERMS) {
    eachObjectAt(spec, path, (term) => {
      mapStringsAt(term, ['namespaces'], (namespace) => namespaceToUpstream(namespace, tenant));
      const selector = objectAt(term, 'namespaceSelector');
      if (selector !== undefined) namespaceSelectorToUpstream(selector, tenant);
    });
  }
  eachObjectAt(spec, EPHEMERAL_CLAIM_TEMPLATES, (template) => labelTemplate(template, tenant));
  if (spec.priorityClassName !== undefined) spec.priorityClassName = podPriorityClassToUpstream(spec.priorityClassName, ctx);
}

export function podSpecToTenant(spec: Json, ctx: ConvertContext): boolean {
  const { tenant } = ctx;
  for (const path of AFFINITY_TERMS) {
    const mine = everyObjectAt(spec, path, (term) => {
      if (!mapStringsAt(term, ['namespaces'], (namespace) => namespaceToTenant(namespace, tenant))) return false;
      const selector = objectAt(term, 'namespaceSelector');
      return selector === undefined || namespaceSelectorToTenant(selector, tenant);
    });
    if (!mine) return false;
  }
  podPriorityClassToTenant(spec, tenant);
  return everyObjectAt(spec, EPHEMERAL_CLAIM_TEMPLATES, (template) => unlabelTemplate(template, tenant));
}

export interface Templates {
  /** Paths to each template (an object with `metadata`) whose children must carry the tenant label. */
  readonly labelled: readonly (readonly string[])[];
  /** Paths to each pod spec. */
  readonly podSpecs: readonly (readonly string[])[];
}

/** A rule for a kind that holds templates: data in, rule out. */
export function templatesRule(templates: Templates): KindRule {
  return {
    toUpstream(obj, ctx) {
      for (const path of templates.labelled) eachObjectAt(obj, path, (template) => labelTemplate(template, ctx.tenant));
      for (const path of templates.podSpecs) eachObjectAt(obj, path, (spec) => podSpecToUpstream(spec, ctx));
      return obj;
    },
    toTenant(obj, ctx) {
      for (const path of templates.labelled) {
        if (!everyObjectAt(obj, path, (template) => unlabelTemplate(template, ctx.tenant))) return null;
      }
      for (const path of templates.podSpecs) {
        if (!everyObjectAt(obj, path, (spec) => podSpecToTenant(spec, ctx))) return null;
      }
      return obj;
    },
  };
}

/** Each template rule's templates, by rule name: what the rules below convert, and where class defaults go (class-defaults.ts). */
export const TEMPLATES_OF_RULE = {
  pod: { labelled: [], podSpecs: [['spec']] },
  /** Deployment, ReplicaSet, DaemonSet, Job, ReplicationController. */
  workload: { labelled: [['spec', 'template']], podSpecs: [['spec', 'template', 'spec']] },
  statefulset: {
    labelled: [
      ['spec', 'template'],
      ['spec', 'volumeClaimTemplates', '*'],
    ],
    podSpecs: [['spec', 'template', 'spec']],
  },
  /** The CronJob controller copies jobTemplate.metadata onto the Jobs it makes; those copy their pod template. */
  cronjob: {
    labelled: [
      ['spec', 'jobTemplate'],
      ['spec', 'jobTemplate', 'spec', 'template'],
    ],
    podSpecs: [['spec', 'jobTemplate', 'spec', 'template', 'spec']],
  },
  podtemplate: { labelled: [['template']], podSpecs: [['template', 'spec']] },
  /** The resourceclaim controller copies spec.metadata onto the ResourceClaims it makes. */
  claimtemplate: { labelled: [['spec']], podSpecs: [] },
} as const satisfies { readonly [rule in RuleName]?: Templates };

const podTemplates = templatesRule(TEMPLATES_OF_RULE.pod);
/** A pod is refused a platform-critical priority class; a template naming one is not (its pods are, upstream: tenants/priority-policy.ts). */
export const pod: KindRule = {
  toUpstream(obj, ctx) {
    refusePodPriorityClass(objectAt(obj, 'spec')?.priorityClassName, ctx);
    return podTemplates.toUpstream(obj, ctx);
  },
  toTenant: (obj, ctx) => podTemplates.toTenant(obj, ctx),
};
export const workload = templatesRule(TEMPLATES_OF_RULE.workload);
export const statefulSet = templatesRule(TEMPLATES_OF_RULE.statefulset);
export const cronJob = templatesRule(TEMPLATES_OF_RULE.cronjob);
export const podTemplate = templatesRule(TEMPLATES_OF_RULE.podtemplate);
export const claimTemplate = templatesRule(TEMPLATES_OF_RULE.claimtemplate);
