// Free text from upstream (event messages, condition messages, review reasons) names upstream objects; the tenant
// reads its own names: `<id>-` and `<id>:` are removed where they start a name. Other tenants' names are left alone.
import type { TenantId } from '../prefix.ts';

/** True for characters that continue a name: a prefix right after one is inside another word. */
function continuesName(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 45 /* - */ || code === 95 /* _ */;
}

/** `Successfully assigned abc123-default/web` → `Successfully assigned default/web` (tenant abc123). */
export function stripTenantPrefixes(text: string, tenant: TenantId): string {
  let at = text.indexOf(tenant);
  if (at < 0) return text;
  let out = '';
  let copied = 0;
  while (at >= 0) {
    const after = text.charCodeAt(at + tenant.length);
    if ((after === 45 /* - */ || after === 58) /* : */ && (at === 0 || !continuesName(text.charCodeAt(at - 1)))) {
      out += text.slice(copied, at);
      copied = at + tenant.length + 1;
    }
    at = text.indexOf(tenant, at + tenant.length);
  }
  return out + text.slice(copied);
}
