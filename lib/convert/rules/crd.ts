// CustomResourceDefinitions and custom resources. A tenant's CRD `widgets.example.com` is `widgets.<id>-example.com`
// upstream with group `<id>-example.com` (the name itself maps in the generic rule); its objects' apiVersion follows.
// A CRD may not define a built-in group: requests for it would reach the built-in API, not the CRD.
import { isTenantCrdGroup } from '../kinds.ts';
import { toTenantName, toUpstreamName } from '../prefix.ts';
import { checkWebhookUrl } from './admission.ts';
import { apiVersionToTenant, apiVersionToUpstream } from './api-groups.ts';
import { mapStringAt, objectAt, stringAt } from './json.ts';
import { invalidField, MAX_TENANT_NAMESPACE, namespaceToTenant, namespaceToUpstream } from './names.ts';
import type { KindRule } from './rule.ts';

const CONVERSION_SERVICE_NAMESPACE = ['spec', 'conversion', 'webhook', 'clientConfig', 'service', 'namespace'];
const KIND = 'CustomResourceDefinition';
const GROUP = 'apiextensions.k8s.io';

export const crd: KindRule = {
  toUpstream(obj, ctx) {
    const spec = objectAt(obj, 'spec');
    const group = spec === undefined ? undefined : stringAt(spec, 'group');
    if (spec !== undefined && group !== undefined) {
      const name = stringAt(objectAt(obj, 'metadata') ?? {}, 'name') ?? '';
      if (!isTenantCrdGroup(group)) {
        throw invalidField(KIND, GROUP, name, 'spec.group', group, 'is a built-in API group; a custom resource cannot define it');
      }
      const firstLabel = group.split('.', 1)[0] as string;
      if (firstLabel.length > MAX_TENANT_NAMESPACE) {
        throw invalidField(KIND, GROUP, name, 'spec.group', group, `its first label must be no more than ${MAX_TENANT_NAMESPACE} characters`);
      }
      const plural = stringAt(objectAt(spec, 'names') ?? {}, 'plural');
      if (name && plural !== undefined && name !== plural + '.' + group) {
        throw invalidField(KIND, GROUP, name, 'metadata.name', name, 'must be spec.names.plural+"."+spec.group');
      }
      spec.group = toUpstreamName(group, ctx.tenant);
    }
    const webhook = objectAt(objectAt(spec ?? {}, 'conversion') ?? {}, 'webhook');
    if (webhook !== undefined) checkWebhookUrl(webhook.clientConfig, 'spec.conversion.webhook.clientConfig', GROUP, ctx);
    mapStringAt(obj, CONVERSION_SERVICE_NAMESPACE, (namespace) => namespaceToUpstream(namespace, ctx.tenant));
    return obj;
  },
  toTenant(obj, ctx) {
    const mine =
      mapStringAt(obj, ['spec', 'group'], (group) => {
        const tenantGroup = toTenantName(group, ctx.tenant);
        return tenantGroup !== null && isTenantCrdGroup(tenantGroup) ? tenantGroup : null;
      }) && mapStringAt(obj, CONVERSION_SERVICE_NAMESPACE, (namespace) => namespaceToTenant(namespace, ctx.tenant));
    return mine ? obj : null;
  },
};

/**
 * Objects of a tenant's CRDs: `example.com/v1` ↔ `<id>-example.com/v1`; and of the kinds tenantgate keeps as its own
 * custom resources (`flowcontrol.apiserver.k8s.io/v1` ↔ `flowcontrol.tenantgate.kubezoo.io/v1`, the table's upstreamGroup).
 */
export const customResource: KindRule = {
  toUpstream(obj, ctx) {
    mapStringAt(obj, ['apiVersion'], (apiVersion) => apiVersionToUpstream(apiVersion, ctx.tenant, stringAt(obj, 'kind') ?? ''));
    return obj;
  },
  toTenant(obj, ctx) {
    return mapStringAt(obj, ['apiVersion'], (apiVersion) => apiVersionToTenant(apiVersion, ctx.tenant)) ? obj : null;
  },
};
