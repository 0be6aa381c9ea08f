// RBAC's escalation check, as the apiserver makes it on ClusterRole and ClusterRoleBinding writes: a user may only
// grant what it holds itself, unless RBAC lets it `escalate` (roles) or `bind` (the bound role). tenantgate makes it
// for a tenant's own users at their cluster scope, whose rights there only tenantgate knows (tenant-rbac.ts).
// Never calls a rule covered that RBAC's comparison (component-helpers policy_comparator.go) would not.
import type { PolicyRule } from './tenant-rbac.ts';

/** One rule per group, resource, verb and name (and per non-resource URL and verb): what coverage is judged on. */
export function breakdownRule(rule: PolicyRule): PolicyRule[] {
  const atoms: PolicyRule[] = [];
  const verbs = rule.verbs ?? [];
  for (const group of rule.apiGroups ?? []) {
    for (const resource of rule.resources ?? []) {
      for (const verb of verbs) {
        const names = rule.resourceNames ?? [];
        if (names.length === 0) atoms.push({ apiGroups: [group], resources: [resource], verbs: [verb] });
        else for (const name of names) atoms.push({ apiGroups: [group], resources: [resource], verbs: [verb], resourceNames: [name] });
      }
    }
  }
  for (const url of rule.nonResourceURLs ?? []) for (const verb of verbs) atoms.push({ nonResourceURLs: [url], verbs: [verb] });
  return atoms;
}

const hasAll = (set: readonly string[], wanted: readonly string[]) => wanted.every((item) => set.includes(item));

// `*` covers every resource; `*/<sub>` every resource's `<sub>`.
function resourcesCovered(owner: readonly string[], wanted: readonly string[]): boolean {
  if (owner.includes('*') || hasAll(owner, wanted)) return true;
  return wanted.every((path) => {
    if (owner.includes(path)) return true;
    const slash = path.indexOf('/');
    return slash !== -1 && owner.includes('*/' + path.slice(slash + 1));
  });
}

function urlCovered(owner: string, path: string): boolean {
  return owner === path || (owner.endsWith('*') && path.startsWith(owner.replace(/\*+$/, '')));
}

/** RBAC's ruleCovers: the owner's rule holds every verb, group, resource, name and URL of the (broken down) rule. */
export function ruleCovers(owner: PolicyRule, rule: PolicyRule): boolean {
  const ownerVerbs = owner.verbs ?? [];
  const ownerGroups = owner.apiGroups ?? [];
  const ownerNames = owner.resourceNames ?? [];
  const names = rule.resourceNames ?? [];
  return (
    (ownerVerbs.includes('*') || hasAll(ownerVerbs, rule.verbs ?? [])) &&
    (ownerGroups.includes('*') || hasAll(ownerGroups, rule.apiGroups ?? [])) &&
    resourcesCovered(owner.resources ?? [], rule.resources ?? []) &&
    (rule.nonResourceURLs ?? []).every((path) => (owner.nonResourceURLs ?? []).some((url) => urlCovered(url, path))) &&
    (ownerNames.length === 0 || (names.length > 0 && hasAll(ownerNames, names)))
  );
}

/** The parts of `rules` the owner's rules do not cover (none: the owner may grant them). */
export function uncoveredRules(owner: readonly PolicyRule[], rules: readonly PolicyRule[]): PolicyRule[] {
  return rules.flatMap(breakdownRule).filter((atom) => !owner.some((ownerRule) => ruleCovers(ownerRule, atom)));
}

/** What a role with an aggregationRule asks of its writer: everything (the apiserver's "cluster-admin privileges"). */
export const FULL_AUTHORITY: readonly PolicyRule[] = [
  { verbs: ['*'], apiGroups: ['*'], resources: ['*'] },
  { verbs: ['*'], nonResourceURLs: ['*'] },
];

/** A rule as the apiserver's refusal lists it (`{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`). */
export function describeRule(rule: PolicyRule): string {
  const list = (values: readonly string[]) => `[${values.map((value) => JSON.stringify(value)).join(' ')}]`;
  const parts: string[] = [];
  if (rule.apiGroups !== undefined) parts.push(`APIGroups:${list(rule.apiGroups)}`);
  if (rule.resources !== undefined) parts.push(`Resources:${list(rule.resources)}`);
  if (rule.resourceNames !== undefined && rule.resourceNames.length > 0) parts.push(`ResourceNames:${list(rule.resourceNames)}`);
  if (rule.nonResourceURLs !== undefined) parts.push(`NonResourceURLs:${list(rule.nonResourceURLs)}`);
  parts.push(`Verbs:${list(rule.verbs ?? [])}`);
  return `{${parts.join(', ')}}`;
}
