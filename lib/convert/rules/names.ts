// How a tenant's names map to upstream names and back: namespaces and cluster-scoped names take the `<id>-` prefix,
// CRD names prefix the group part; names that would not fit upstream are refused (422) before any upstream call.
// Never returns a tenant name for an upstream name outside the tenant's exact prefix.
import { MAX_UPSTREAM_NAME, MAX_UPSTREAM_NAMESPACE, PREFIX_LENGTH, toTenantName, toUpstreamName, type TenantId } from '../prefix.ts';
import { invalid, StatusError } from '../../errors/status-error.ts';
import type { KindRow } from '../kinds.ts';
import { apiGroupToTenant, wholeGroupToUpstream } from './api-groups.ts';
import { groupToTenant, groupToUpstream, userToTenant, userToUpstream } from './identity.ts';
import { signerResourceNameToTenant, signerResourceNameToUpstream } from './signers.ts';

/** Longest namespace and longest other name a tenant may use. */
export const MAX_TENANT_NAMESPACE = MAX_UPSTREAM_NAMESPACE - PREFIX_LENGTH;
export const MAX_TENANT_NAME = MAX_UPSTREAM_NAME - PREFIX_LENGTH;

/**
 * How a kind's `metadata.name` maps upstream. plain: unchanged (namespaced and shared kinds);
 * prefix: `<id>-<name>` (the tenant's cluster-scoped kinds); crd: `<plural>.<id>-<group>`; user and group: as
 * identities map (the names of RBAC rules on `users` and `groups`, which impersonation asks about); signer: into the
 * tenant's signer domain (RBAC rules on `signers`, which the apiserver's CSR admission asks about); group-version:
 * `<version>.<group>` with the group as API groups map (APIServices: `v1.<id>-example.com`); encoded-prefix: the
 * prefix, and a name that would then be no DNS subdomain written in hex (storedNameToUpstream).
 */
export type NameMapping = 'plain' | 'prefix' | 'encoded-prefix' | 'crd' | 'user' | 'group' | 'signer' | 'group-version';

export function nameMappingOfRow(row: KindRow): NameMapping {
  if (row.rule === 'apiservice') return 'group-version';
  if (row.tenancy !== 'tenant' || row.scope === 'Namespaced') return 'plain';
  if (row.rule === 'crd') return 'crd';
  // A ClusterRoleBinding's name may be any path segment (`system:discovery`); kept as a custom resource, it must be a
  // DNS subdomain there.
  return row.rule === 'clusterrolebinding' && row.upstreamGroup !== undefined ? 'encoded-prefix' : 'prefix';
}

/** How an encoded name starts after the prefix: a tenant name starting so is encoded too, so the two never meet. */
const ENCODED_MARK = 'tghex-';
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * A name (any path segment) under the tenant's prefix as a custom resource may be named (a DNS subdomain):
 * `<id>-<name>` when that is one, else `<id>-tghex-<the name's UTF-8 in hex>`. One to one, and reversed by
 * storedNameToTenant; too long once written so is refused by checkNameFits.
 */
export function storedNameToUpstream(name: string, tenant: TenantId): string {
  return toUpstreamName(needsEncoding(name) ? ENCODED_MARK + Buffer.from(name, 'utf8').toString('hex') : name, tenant);
}

/** Whether `<id>-<name>` would be no DNS subdomain, or could be taken for an encoded name (the prefix is [a-z0-9]{6}-). */
function needsEncoding(name: string): boolean {
  return name.startsWith(ENCODED_MARK) || !DNS_SUBDOMAIN.test('x-' + name);
}

/** The tenant's name of an upstream name storedNameToUpstream made; null when it is not under the tenant's prefix. */
export function storedNameToTenant(upstreamName: string, tenant: TenantId): string | null {
  const name = toTenantName(upstreamName, tenant);
  if (name === null || !name.startsWith(ENCODED_MARK)) return name;
  const hex = name.slice(ENCODED_MARK.length);
  return /^(?:[0-9a-f]{2})+$/.test(hex) ? Buffer.from(hex, 'hex').toString('utf8') : null;
}

/** Text with the tenant's encoded names (`<id>-tghex-…`) as `<id>-<name>`, for its prefixes to be stripped as any. */
export function encodedNamesToPrefixed(text: string, tenant: TenantId): string {
  const encoded = tenant + '-' + ENCODED_MARK;
  if (!text.includes(encoded)) return text;
  return text.replace(new RegExp(`${encoded}((?:[0-9a-f]{2})+)`, 'g'), (_match, hex: string) => tenant + '-' + Buffer.from(hex, 'hex').toString('utf8'));
}

export function nameToUpstream(mapping: NameMapping, name: string, tenant: TenantId): string {
  if (mapping === 'plain') return name;
  if (mapping === 'prefix') return toUpstreamName(name, tenant);
  if (mapping === 'encoded-prefix') return storedNameToUpstream(name, tenant);
  if (mapping === 'user') return userToUpstream(name, tenant);
  if (mapping === 'group') return groupToUpstream(name, tenant);
  if (mapping === 'signer') return signerResourceNameToUpstream(name, tenant);
  if (mapping === 'group-version') return groupVersionNameToUpstream(name, tenant);
  return crdNameToUpstream(name, tenant);
}

export function nameToTenant(mapping: NameMapping, upstreamName: string, tenant: TenantId): string | null {
  if (mapping === 'plain') return upstreamName;
  if (mapping === 'prefix') return toTenantName(upstreamName, tenant);
  if (mapping === 'encoded-prefix') return storedNameToTenant(upstreamName, tenant);
  if (mapping === 'user') return userToTenant(upstreamName, tenant);
  if (mapping === 'group') return groupToTenant(upstreamName, tenant);
  if (mapping === 'signer') return signerResourceNameToTenant(upstreamName, tenant);
  if (mapping === 'group-version') return groupVersionNameToTenant(upstreamName, tenant);
  return crdNameToTenant(upstreamName, tenant);
}

/** `v1.example.com` → `v1.abc123-example.com`; built-in groups (`v1.apps`, core's `v1.`) stay as they are. */
export function groupVersionNameToUpstream(name: string, tenant: TenantId): string {
  const dot = name.indexOf('.');
  return dot < 0 ? name : name.slice(0, dot + 1) + wholeGroupToUpstream(name.slice(dot + 1), tenant);
}

/** The tenant's name of an upstream `<version>.<group>`; null when the group is another tenant's (or nobody's). */
export function groupVersionNameToTenant(upstreamName: string, tenant: TenantId): string | null {
  const dot = upstreamName.indexOf('.');
  if (dot < 0) return upstreamName;
  const group = apiGroupToTenant(upstreamName.slice(dot + 1), tenant);
  return group === null ? null : upstreamName.slice(0, dot + 1) + group;
}

/** `widgets.example.com` → `widgets.abc123-example.com` (a CRD's name is `<plural>.<group>`). */
export function crdNameToUpstream(name: string, tenant: TenantId): string {
  const dot = name.indexOf('.');
  if (dot < 0) return toUpstreamName(name, tenant); // not a CRD name: maps to a name no CRD can have
  return name.slice(0, dot + 1) + toUpstreamName(name.slice(dot + 1), tenant);
}

export function crdNameToTenant(upstreamName: string, tenant: TenantId): string | null {
  const dot = upstreamName.indexOf('.');
  if (dot < 0) return null;
  const group = toTenantName(upstreamName.slice(dot + 1), tenant);
  return group === null ? null : upstreamName.slice(0, dot + 1) + group;
}

export function namespaceToUpstream(namespace: string, tenant: TenantId): string {
  return toUpstreamName(namespace, tenant);
}

export function namespaceToTenant(upstreamNamespace: string, tenant: TenantId): string | null {
  return toTenantName(upstreamNamespace, tenant);
}

/** A 422 Invalid in the apiserver's own words, so kubectl shows it like any validation error. */
export function invalidField(kind: string, group: string, name: string, field: string, value: string, why: string): StatusError {
  const detail = `Invalid value: ${JSON.stringify(value)}: ${why}`;
  return invalid(`${kind || 'object'} ${JSON.stringify(name)} is invalid: ${field}: ${detail}`, {
    name,
    group,
    kind,
    causes: [{ reason: 'FieldValueInvalid', message: detail, field }],
  });
}

/** Refuses (422) a namespace or cluster-scoped name that is too long once prefixed. */
export function checkNameFits(row: KindRow, name: string): void {
  const mapping = nameMappingOfRow(row);
  if (mapping === 'plain') return;
  const limit = row.group === '' && row.resource === 'namespaces' ? MAX_TENANT_NAMESPACE : MAX_TENANT_NAME;
  if (name.length > limit) throw invalidField(row.kind, row.group, name, 'metadata.name', name, `must be no more than ${limit} characters`);
  if (mapping === 'encoded-prefix' && needsEncoding(name) && PREFIX_LENGTH + ENCODED_MARK.length + 2 * Buffer.byteLength(name) > MAX_UPSTREAM_NAME) {
    throw invalidField(
      row.kind,
      row.group,
      name,
      'metadata.name',
      name,
      `must be no more than ${(MAX_TENANT_NAME - ENCODED_MARK.length) >> 1} bytes unless it is a lowercase RFC 1123 subdomain`,
    );
  }
}

/** Refuses (422) an object's namespace that is too long once prefixed. */
export function checkNamespaceFits(row: KindRow, name: string, namespace: string): void {
  if (namespace.length > MAX_TENANT_NAMESPACE) {
    throw invalidField(row.kind, row.group, name, 'metadata.namespace', namespace, `must be no more than ${MAX_TENANT_NAMESPACE} characters`);
  }
}
