// FlowSchemas and PriorityLevelConfigurations of a tenant: kept upstream as tenantgate's custom resources (the table's
// upstreamGroup), so only their apiVersion changes group. Never makes one a real FlowSchema or priority level upstream.
import { apiVersionToTenant, apiVersionToUpstream } from './api-groups.ts';
import { mapStringAt } from './json.ts';
import type { KindRule } from './rule.ts';

/**
 * `flowcontrol.apiserver.k8s.io/v1` ↔ `flowcontrol.tenantgate.kubezoo.io/v1`. What the spec names (a FlowSchema's
 * priorityLevelConfiguration.name, its subjects' users, groups and service accounts) stays in the tenant's words:
 * nothing enforces a tenant's flow control, so those names reach nothing and need no prefix.
 */
export const flowControl: KindRule = {
  toUpstream(obj, ctx) {
    mapStringAt(obj, ['apiVersion'], (apiVersion) => apiVersionToUpstream(apiVersion, ctx.tenant));
    return obj;
  },
  toTenant(obj, ctx) {
    return mapStringAt(obj, ['apiVersion'], (apiVersion) => apiVersionToTenant(apiVersion, ctx.tenant)) ? obj : null;
  },
};
