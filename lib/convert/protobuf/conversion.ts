// What the rules of each direction carry besides the bytes: a request body's conversion (tenant, kind, the discovery it
// may ask) and the JSON rules' context made from it; an answer's judgement, not the tenant's, thrown from deep in a
// rewrite, and the 502 for an answer that cannot be converted. Never guesses a custom resource's scope: without
// discovery, a rule that asks it is refused (415).
import type { KindRow, Scope } from '../kinds.ts';
import type { TenantId } from '../prefix.ts';
import type { ConvertContext } from '../rules/rule.ts';
import { unsupported } from './wire.ts';

export interface Conversion {
  readonly row: KindRow;
  readonly tenant: TenantId;
  readonly kindScope: ((apiVersion: string, kind: string) => Scope | undefined) | undefined;
  readonly scopeOf: ((group: string, resource: string) => Scope | undefined) | undefined;
  readonly webhookUrlHosts: ReadonlySet<string> | undefined;
  readonly allowsPlatformClass: ConvertContext['allowsPlatformClass'];
  readonly priorityClasses: ConvertContext['priorityClasses'];
}

function noScopeOf(): never {
  throw unsupported('a role rule with resourceNames of a custom resource');
}

function noKindScope(): never {
  throw unsupported('a reference to a custom resource');
}

/** The context the JSON rules ask; a custom resource's scope without discovery is refused (415) rather than guessed. */
export function ruleContext(conversion: Conversion): ConvertContext {
  const { tenant, kindScope, scopeOf, webhookUrlHosts } = conversion;
  return { tenant, scopeOf: scopeOf ?? noScopeOf, kindScope: kindScope ?? noKindScope, webhookUrlHosts };
}
