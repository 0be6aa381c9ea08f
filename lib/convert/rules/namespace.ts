// Namespace: its name takes the prefix (generic rule) and the tenant label (forced on every write, so immutable);
// the apiserver's own `kubernetes.io/metadata.name` label follows the name both ways.
import { stringAt, objectAt } from './json.ts';
import { NAMESPACE_NAME_LABEL } from './label-selectors.ts';
import { namespaceToTenant, namespaceToUpstream } from './names.ts';
import type { KindRule } from './rule.ts';

export const namespace: KindRule = {
  toUpstream(obj, ctx) {
    const labels = objectAt(objectAt(obj, 'metadata') ?? {}, 'labels');
    const name = labels === undefined ? undefined : stringAt(labels, NAMESPACE_NAME_LABEL);
    if (labels !== undefined && name) labels[NAMESPACE_NAME_LABEL] = namespaceToUpstream(name, ctx.tenant);
    return obj;
  },
  toTenant(obj, ctx) {
    const labels = objectAt(objectAt(obj, 'metadata') ?? {}, 'labels');
    const name = labels === undefined ? undefined : stringAt(labels, NAMESPACE_NAME_LABEL);
    if (labels !== undefined && name) {
      const mine = namespaceToTenant(name, ctx.tenant);
      if (mine === null) return null;
      labels[NAMESPACE_NAME_LABEL] = mine;
    }
    return obj;
  },
};
