// NetworkPolicy peers select namespaces: upstream they select only the tenant's, so "all namespaces" ({}) means the
// tenant's namespaces and never lets another tenant's pods in.
import { everyObjectAt, eachObjectAt } from './json.ts';
import { namespaceSelectorToTenant, namespaceSelectorToUpstream } from './label-selectors.ts';
import type { KindRule } from './rule.ts';

const PEER_NAMESPACE_SELECTORS = [
  ['spec', 'ingress', '*', 'from', '*', 'namespaceSelector'],
  ['spec', 'egress', '*', 'to', '*', 'namespaceSelector'],
];

export const networkPolicy: KindRule = {
  toUpstream(obj, ctx) {
    for (const path of PEER_NAMESPACE_SELECTORS) eachObjectAt(obj, path, (selector) => namespaceSelectorToUpstream(selector, ctx.tenant));
    return obj;
  },
  toTenant(obj, ctx) {
    for (const path of PEER_NAMESPACE_SELECTORS) {
      if (!everyObjectAt(obj, path, (selector) => namespaceSelectorToTenant(selector, ctx.tenant))) return null;
    }
    return obj;
  },
};
