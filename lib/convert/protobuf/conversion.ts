// What the rules of each direction carry besides the bytes: a request body's conversion (tenant, kind, the discovery it
// may ask) and the JSON rules' context made from it; an answer's judgement, not the tenant's, thrown from deep in a
// rewrite, and the 502 for an answer that cannot be converted. Never guesses a custom resource's scope: without
// discovery, a rule that asks it is refused (415).
import { badGateway, StatusError } from '../../errors/status-error.ts';
import type { KindRow, Scope } from '../kinds.ts';
import type { TenantId } from '../prefix.ts';
import { unsupported } from './wire.ts';
import type { ConvertContext } from '../rules/rule.ts';

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

// ---- judging: an object found not to be the tenant's anywhere deep in it ----

/** Thrown from deep in a rewrite (visitors of rewriteAt) when the object is not the tenant's; caught at the object. */
class NotTheTenants {}
export const NOT_THE_TENANTS = new NotTheTenants();
export function notTheTenants(): never {
  throw NOT_THE_TENANTS;
}

/**
 * A malformed answer of the upstream is the upstream's fault (502), never the client's: the 400 (malformed) and 415
 * (a contentEncoding, a rule's output that cannot be written) the wire machinery of to-upstream.ts throws for bodies.
 */
export function fromUpstream<T>(convert: () => T): T {
  try {
    return convert();
  } catch (error) {
    if (error instanceof StatusError && error.code >= 400 && error.code < 500) {
      throw badGateway(`the upstream's protobuf answer cannot be converted: ${error.message.replace(/^the protobuf request body is malformed: /, '')}`);
    }
    throw error;
  }
}
