// Events (core v1 and events.k8s.io): the object they are about and the related one are references into the
// tenant's cluster; their text names upstream objects, shown to the tenant without its prefix.
import { stringAt } from './json.ts';
import { objectReferencesRule } from './references.ts';
import type { KindRule } from './rule.ts';
import { stripTenantPrefixes } from '../status.ts';

/** core: involvedObject, related, message; events.k8s.io: regarding, related, note. */
const references = objectReferencesRule([['involvedObject'], ['regarding'], ['related']]);
const TEXTS = ['message', 'note'] as const;

export const event: KindRule = {
  toUpstream: references.toUpstream,
  toTenant(obj, ctx) {
    if (references.toTenant(obj, ctx) === null) return null;
    for (const field of TEXTS) {
      const text = stringAt(obj, field);
      if (text) obj[field] = stripTenantPrefixes(text, ctx.tenant);
    }
    return obj;
  },
};
