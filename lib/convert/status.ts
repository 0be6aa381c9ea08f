// The tenant's view of a Status from the upstream: upstream names and identities in its message and
// details lose the tenant's prefix. Never reveals or invents another tenant's name: only this tenant's
// exact prefix is removed, and only where a name or identity starts.
import { STORED_UPSTREAM_GROUPS, tenantGroupOfStored } from './kinds.ts';
import { toTenantName, type TenantId } from './prefix.ts';
import { celNamespacesInTextToTenant } from './rules/cel-namespaces.ts';
import { encodedNamesToPrefixed } from './rules/names.ts';
import { signerResourceNameToTenant, tenantSignerDomain } from './rules/signers.ts';

/** `flowschemas.flowcontrol.tenantgate.kubezoo.io "…"` → `flowschemas.flowcontrol.apiserver.k8s.io "…"`: stored kinds in the tenant's group. */
function storedGroupsToTenant(text: string): string {
  for (const upstreamGroup of STORED_UPSTREAM_GROUPS) {
    if (text.includes(upstreamGroup)) text = text.replaceAll(upstreamGroup, tenantGroupOfStored(upstreamGroup)!);
  }
  return text;
}

export interface StatusScope {
  /**
   * Whether objects of `kind` in `group` are namespaced, so their names are not prefixed upstream and a
   * `details.name` that happens to start with the tenant's prefix is the tenant's own name, kept as is.
   * `kind` is `details.kind`: the resource (`configmaps`) for most reasons, the Kind (`ConfigMap`) for
   * Invalid; `group` is the tenant's view. Absent: every name is taken to be possibly prefixed.
   */
  isNamespaced?: (kind: string, group: string) => boolean;
}

/**
 * A copy of an upstream Status as the tenant sees it: `message`, `details.name`, `details.group`, and
 * `details.causes[].message`/`.field` without the tenant's prefix — namespaces (`abc123-default`),
 * cluster-scoped names, CRD groups (`widgets.abc123-example.com`), users (`abc123-admin`), groups
 * (`abc123:developers`) and service accounts (`system:serviceaccount:abc123-ns:sa`). Anything that is
 * not an object is returned as it is; the input is not modified.
 */
export function statusToTenant(status: any, tenant: TenantId, scope?: StatusScope): any {
  if (status === null || typeof status !== 'object' || Array.isArray(status)) return status;
  const details = status.details;
  const hasDetails = details !== null && typeof details === 'object' && !Array.isArray(details);
  const group =
    hasDetails && typeof details.group === 'string' ? (tenantGroupOfStored(details.group) ?? toTenantName(details.group, tenant) ?? details.group) : '';
  // A namespaced object's own name is never prefixed: keep it, even where it looks prefixed.
  let keep: string | undefined;
  if (hasDetails && typeof details.name === 'string' && typeof details.kind === 'string' && scope?.isNamespaced?.(details.kind, group)) {
    keep = details.name;
  }

  const out = { ...status };
  // An admission policy's refusal quotes the failed expression as the upstream evaluates it: read it as written.
  if (typeof status.message === 'string') out.message = stripTenantPrefixes(storedGroupsToTenant(celNamespacesInTextToTenant(status.message)), tenant, keep);
  if (!hasDetails) return out;
  const tenantDetails = { ...details };
  if (typeof details.group === 'string') tenantDetails.group = group;
  if (typeof details.name === 'string' && keep === undefined) tenantDetails.name = stripTenantPrefixes(details.name, tenant);
  if (Array.isArray(details.causes)) {
    tenantDetails.causes = details.causes.map((cause: any) => {
      if (cause === null || typeof cause !== 'object') return cause;
      const tenantCause = { ...cause };
      if (typeof cause.message === 'string')
        tenantCause.message = stripTenantPrefixes(storedGroupsToTenant(celNamespacesInTextToTenant(cause.message)), tenant, keep);
      if (typeof cause.field === 'string') tenantCause.field = stripTenantPrefixes(cause.field, tenant, keep);
      return tenantCause;
    });
  }
  out.details = tenantDetails;
  return out;
}

/**
 * `text` with every `<id>-` and `<id>:` of this tenant removed where a name or identity starts: at the
 * beginning, or after a character that cannot be inside a name (`"`, space, `:`, `/`, `.`, `(`, ...), and
 * followed by a letter or digit. So `"abc123-default"`, `namespace abc123-default`,
 * `system:serviceaccount:abc123-ns:sa`, `widgets.abc123-example.com` and `"abc123:devs"` are rewritten;
 * `xabc123-a`, `kube-system`, `def456-a` (another tenant, or a shared upstream name) are not. Each
 * occurrence is removed once: `abc123-abc123-x` becomes `abc123-x`, the tenant's own name.
 * `keep`: a name that stays as is where it stands quoted (`"<keep>"`), except after `namespace `.
 */
export function stripTenantPrefixes(text: string, tenant: TenantId, keep?: string): string {
  text = encodedNamesToPrefixed(text, tenant);
  const signers = signerNamesIn(text, tenant);
  if (signers === null) return stripPrefixes(text, tenant, keep);
  // Signer names of the tenant's signer domain (a CSR's, in admission messages and Table cells) read as the tenant
  // wrote them; the text around them loses its prefixes as usual.
  let out = '';
  let copiedTo = 0;
  for (const match of signers) {
    const mine = signerResourceNameToTenant(match[0], tenant);
    if (mine === null) continue;
    out += stripPrefixes(text.slice(copiedTo, match.index), tenant, keep) + mine;
    copiedTo = match.index + match[0].length;
  }
  return out + stripPrefixes(text.slice(copiedTo), tenant, keep);
}

/** Every signer name of the tenant's signer domain in `text`, or null when there is none (the usual case, at once). */
function signerNamesIn(text: string, tenant: TenantId): IterableIterator<RegExpExecArray> | null {
  const domain = tenantSignerDomain(tenant);
  if (!text.includes(domain + '/')) return null;
  return text.matchAll(new RegExp(`${domain.replaceAll('.', '\\.')}/(raw:[^"\\s]*|[-a-z0-9.*]+)`, 'g'));
}

function stripPrefixes(text: string, tenant: TenantId, keep?: string): string {
  let at = text.indexOf(tenant);
  if (at === -1) return text;
  // For the tenant `system`, `system:` starts Kubernetes' own identities (system:authenticated,
  // system:serviceaccount:...), not the tenant's groups: leave those.
  const groupSeparator = tenant === 'system' ? -1 : 58; /* ':' */
  let out = '';
  let copiedTo = 0;
  for (; at !== -1; at = text.indexOf(tenant, at + 1)) {
    const separator = text.charCodeAt(at + tenant.length);
    if (separator !== 45 /* '-' */ && separator !== groupSeparator) continue;
    if (!isNameStart(text.charCodeAt(at + tenant.length + 1))) continue;
    if (at > 0 && isNameCharacter(text.charCodeAt(at - 1))) continue;
    if (keep !== undefined && isKeptQuotedName(text, at, keep)) continue;
    out += text.slice(copiedTo, at);
    copiedTo = at + tenant.length + 1;
  }
  return copiedTo === 0 ? text : out + text.slice(copiedTo);
}

function isKeptQuotedName(text: string, at: number, keep: string): boolean {
  return (
    at > 0 &&
    text.charCodeAt(at - 1) === 34 /* '"' */ &&
    text.startsWith(keep, at) &&
    text.charCodeAt(at + keep.length) === 34 &&
    !text.endsWith('namespace "', at)
  );
}

/** [A-Za-z0-9]: how a name (or a group, or a user) starts. */
function isNameStart(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

/** [A-Za-z0-9_-]: a character that continues a name, so a prefix right after it is not at a name's start. */
function isNameCharacter(c: number): boolean {
  return isNameStart(c) || c === 45 /* '-' */ || c === 95; /* '_' */
}
