// Roles and bindings. A policy rule's custom API groups take the prefix, and its resourceNames take it when the
// resources are the tenant's cluster-scoped kinds (names of both forms when a rule mixes kinds or uses '*').
// Aggregated ClusterRoles only aggregate the tenant's own roles, and the upstream's own aggregated roles (admin,
// edit, view) never aggregate a tenant's: its aggregate-to-* labels take a key of the tenant's upstream.
// Subjects are upstream identities; a ClusterRoleBinding's are shadow identities that grant nothing (clusterBinding).
import { apiGroupsToTenant, apiGroupsToUpstream, apiVersionToTenant, apiVersionToUpstream } from './api-groups.ts';
import { builtinKindOf } from '../kinds.ts';
import { clusterSubjectToTenant, clusterSubjectToUpstream } from './cluster-subjects.ts';
import { groupToTenant, groupToUpstream, userToTenant, userToUpstream } from './identity.ts';
import { eachObjectAt, everyObjectAt, isObject, mapStringAt, stringsOf } from './json.ts';
import { objectSelectorToTenant, objectSelectorToUpstream } from './label-selectors.ts';
import { invalidField, nameMappingOfRow, namespaceToTenant, namespaceToUpstream, nameToTenant, nameToUpstream, type NameMapping } from './names.ts';
import { nameMappingOfResource } from './referents.ts';
import type { ConvertContext, Json, KindRule } from './rule.ts';

const MAPPING_ORDER: readonly NameMapping[] = ['plain', 'prefix', 'crd', 'user', 'group', 'signer', 'group-version'];

/**
 * How a rule's resourceNames map upstream, in a fixed order: one mapping when every (group, resource) agrees,
 * several when they differ or are unknown ('*'), in which case the upstream rule lists the names once per mapping.
 * `apiGroups` are in the tenant's form.
 */
function nameMappingsOf(rule: Json, ctx: ConvertContext): NameMapping[] {
  const found = new Set<NameMapping>();
  for (const group of stringsOf(rule.apiGroups)) {
    for (const resource of stringsOf(rule.resources)) {
      const mapping = nameMappingOfResource(group, resource, ctx);
      if (mapping === undefined) {
        found.add('plain');
        found.add('prefix');
      } else if (mapping !== 'none') {
        found.add(mapping);
      }
    }
  }
  return found.size === 0 ? ['plain'] : MAPPING_ORDER.filter((mapping) => found.has(mapping));
}

export function policyRuleToUpstream(rule: Json, ctx: ConvertContext): void {
  const names = stringsOf(rule.resourceNames);
  if (names.length > 0) {
    const mappings = nameMappingsOf(rule, ctx);
    if (mappings.length !== 1 || mappings[0] !== 'plain') {
      rule.resourceNames = mappings.flatMap((mapping) => names.map((name) => nameToUpstream(mapping, name, ctx.tenant)));
    }
  }
  if (Array.isArray(rule.apiGroups)) rule.apiGroups = apiGroupsToUpstream(stringsOf(rule.apiGroups), stringsOf(rule.resources), ctx.tenant);
}

/**
 * Lenient: a rule is never the reason an object is not the tenant's. Groups and names the tenant could not have
 * written stay as they are (they name nothing of another tenant's: aggregation only reaches the tenant's roles).
 */
export function policyRuleToTenant(rule: Json, ctx: ConvertContext): void {
  if (Array.isArray(rule.apiGroups)) rule.apiGroups = apiGroupsToTenant(stringsOf(rule.apiGroups), ctx.tenant);
  const names = stringsOf(rule.resourceNames);
  if (names.length === 0) return;
  const mappings = nameMappingsOf(rule, ctx);
  const [first] = mappings;
  if (mappings.length === 1 && first !== undefined) {
    rule.resourceNames = names.map((name) => nameToTenant(first, name, ctx.tenant) ?? name);
    return;
  }
  // Several mappings: the names are written once per mapping; take them back only when that is exactly what is there.
  if (first === undefined || names.length % mappings.length !== 0) return;
  const count = names.length / mappings.length;
  const mine: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = nameToTenant(first, names[i] as string, ctx.tenant);
    if (name === null) return;
    mine.push(name);
  }
  for (let m = 1; m < mappings.length; m++) {
    for (let i = 0; i < count; i++) {
      if (names[m * count + i] !== nameToUpstream(mappings[m] as NameMapping, mine[i] as string, ctx.tenant)) return;
    }
  }
  rule.resourceNames = mine;
}

const RULES = ['rules', '*'];
const AGGREGATION_SELECTORS = ['aggregationRule', 'clusterRoleSelectors', '*'];
const AGGREGATION_EXPRESSIONS = ['aggregationRule', 'clusterRoleSelectors', '*', 'matchExpressions', '*'];

/** The domain of the labels the upstream's own aggregated ClusterRoles select (aggregate-to-admin, -edit, -view). */
const RBAC_LABEL_DOMAIN = 'rbac.authorization.k8s.io/';
const AGGREGATION_LABEL = RBAC_LABEL_DOMAIN + 'aggregate-to-';

function aggregationLabelsDomain(tenant: string): string {
  return `${tenant}.aggregation.kubezoo.io/`;
}

/** A label key on a tenant's ClusterRole as the upstream holds it (aggregate-to-* in the tenant's own domain). */
export function aggregationKeyToUpstream(key: string, tenant: string): string {
  return key.startsWith(AGGREGATION_LABEL) ? aggregationLabelsDomain(tenant) + key.slice(RBAC_LABEL_DOMAIN.length) : key;
}

function aggregationKeyToTenant(key: string, tenant: string): string {
  const domain = aggregationLabelsDomain(tenant);
  return key.startsWith(domain) ? RBAC_LABEL_DOMAIN + key.slice(domain.length) : key;
}

/** Renames the keys of a label map in place (keeping their order). */
function renameKeys(map: unknown, rename: (key: string) => string): void {
  if (!isObject(map)) return;
  for (const [key, value] of Object.entries(map)) {
    delete map[key];
    map[rename(key)] = value;
  }
}

function aggregationLabelsTo(obj: Json, rename: (key: string) => string): void {
  const metadata = obj.metadata;
  if (isObject(metadata)) renameKeys(metadata.labels, rename);
  eachObjectAt(obj, AGGREGATION_SELECTORS, (selector) => renameKeys(selector.matchLabels, rename));
  eachObjectAt(obj, AGGREGATION_EXPRESSIONS, (expression) => mapStringAt(expression, ['key'], rename));
}

/** Role and ClusterRole. */
export const role: KindRule = {
  toUpstream(obj, ctx) {
    eachObjectAt(obj, RULES, (rule) => policyRuleToUpstream(rule, ctx));
    aggregationLabelsTo(obj, (key) => aggregationKeyToUpstream(key, ctx.tenant));
    eachObjectAt(obj, AGGREGATION_SELECTORS, (selector) => objectSelectorToUpstream(selector, ctx.tenant));
    return obj;
  },
  toTenant(obj, ctx) {
    eachObjectAt(obj, RULES, (rule) => policyRuleToTenant(rule, ctx));
    if (!everyObjectAt(obj, AGGREGATION_SELECTORS, (selector) => objectSelectorToTenant(selector, ctx.tenant))) return null;
    aggregationLabelsTo(obj, (key) => aggregationKeyToTenant(key, ctx.tenant));
    return obj;
  },
};

/** ClusterRoles are the tenant's cluster-scoped objects; Roles are namespaced (names unchanged). */
const CLUSTER_ROLE_NAMES = nameMappingOfRow(builtinKindOf('rbac.authorization.k8s.io', 'ClusterRole')!);

function subjectToUpstream(subject: Json, ctx: ConvertContext): void {
  const { tenant } = ctx;
  switch (subject.kind) {
    case 'User':
      mapStringAt(subject, ['name'], (name) => userToUpstream(name, tenant));
      break;
    case 'Group':
      mapStringAt(subject, ['name'], (name) => groupToUpstream(name, tenant));
      break;
    case 'ServiceAccount':
      mapStringAt(subject, ['namespace'], (namespace) => namespaceToUpstream(namespace, tenant));
      break;
  }
}

function subjectToTenant(subject: Json, ctx: ConvertContext): boolean {
  const { tenant } = ctx;
  switch (subject.kind) {
    case 'User':
      return mapStringAt(subject, ['name'], (name) => userToTenant(name, tenant));
    case 'Group':
      return mapStringAt(subject, ['name'], (name) => groupToTenant(name, tenant));
    case 'ServiceAccount':
      return mapStringAt(subject, ['namespace'], (namespace) => namespaceToTenant(namespace, tenant));
    default:
      return true;
  }
}

const SUBJECTS = ['subjects', '*'];

function roleRefToUpstream(obj: Json, ctx: ConvertContext): Json {
  const roleRef = obj.roleRef;
  if (isObject(roleRef) && roleRef.kind === 'ClusterRole') {
    mapStringAt(roleRef, ['name'], (name) => nameToUpstream(CLUSTER_ROLE_NAMES, name, ctx.tenant));
  }
  return obj;
}

function roleRefToTenant(obj: Json, ctx: ConvertContext): Json | null {
  const roleRef = obj.roleRef;
  if (isObject(roleRef) && roleRef.kind === 'ClusterRole') {
    if (!mapStringAt(roleRef, ['name'], (name) => nameToTenant(CLUSTER_ROLE_NAMES, name, ctx.tenant))) return null;
  }
  return obj;
}

/** Names of the RoleBindings tenantgate keeps in a tenant's namespaces; no tenant may write one. */
export const TENANTGATE_BINDING_PREFIX = 'tenantgate:';

/**
 * RoleBinding. Those tenantgate keeps in the tenant's namespaces (named `tenantgate:...`, a name no tenant can
 * write) are not the tenant's: its admin's grant and the expansions of its ClusterRoleBindings.
 */
export const binding: KindRule = {
  toUpstream(obj, ctx) {
    const name = isObject(obj.metadata) ? obj.metadata.name : undefined;
    if (typeof name === 'string' && name.startsWith(TENANTGATE_BINDING_PREFIX)) {
      throw invalidField(
        'RoleBinding',
        'rbac.authorization.k8s.io',
        name,
        'metadata.name',
        name,
        `names starting with "${TENANTGATE_BINDING_PREFIX}" are reserved for tenantgate`,
      );
    }
    eachObjectAt(obj, SUBJECTS, (subject) => subjectToUpstream(subject, ctx));
    return roleRefToUpstream(obj, ctx);
  },
  toTenant(obj, ctx) {
    const metadata = obj.metadata;
    if (isObject(metadata) && typeof metadata.name === 'string' && metadata.name.startsWith(TENANTGATE_BINDING_PREFIX)) return null;
    if (!everyObjectAt(obj, SUBJECTS, (subject) => subjectToTenant(subject, ctx))) return null;
    return roleRefToTenant(obj, ctx);
  },
};

const CLUSTER_ROLE_BINDING = 'ClusterRoleBinding';

/**
 * ClusterRoleBinding: kept upstream as tenantgate's custom resource (`rbac.tenantgate.kubezoo.io/v1`, the table's
 * upstreamGroup), which the RBAC authorizer never reads, its subjects in the shadow form (cluster-subjects.ts) that
 * no identity carries either way. The lifecycle controller expands it into RoleBindings in each of the tenant's
 * namespaces; tenantgate evaluates it for questions at the cluster scope (auth/tenant-rbac.ts).
 */
export const clusterBinding: KindRule = {
  toUpstream(obj, ctx) {
    mapStringAt(obj, ['apiVersion'], (apiVersion) => apiVersionToUpstream(apiVersion, ctx.tenant, CLUSTER_ROLE_BINDING));
    eachObjectAt(obj, SUBJECTS, (subject) => clusterSubjectToUpstream(subject, ctx.tenant));
    return roleRefToUpstream(obj, ctx);
  },
  toTenant(obj, ctx) {
    if (!mapStringAt(obj, ['apiVersion'], (apiVersion) => apiVersionToTenant(apiVersion, ctx.tenant))) return null;
    if (!everyObjectAt(obj, SUBJECTS, (subject) => clusterSubjectToTenant(subject, ctx.tenant))) return null;
    return roleRefToTenant(obj, ctx);
  },
};
