// Kinds that are not the tenant's: shared ones are read as they are (nodes without what would tell of other
// tenants' volumes and images, APIServices only of the groups the tenant sees) and never written; hidden ones are
// never served at all.
import { forbidden, notFound } from '../../errors/status-error.ts';
import { visibleGroup } from '../visibility.ts';
import { objectAt, stringAt } from './json.ts';
import { groupVersionNameToTenant } from './names.ts';
import type { KindRule } from './rule.ts';

const readOnly = (): never => {
  throw forbidden('this resource is shared by all tenants of this cluster and read-only');
};

export const shared: KindRule = {
  toUpstream: readOnly,
  toTenant(obj) {
    return obj;
  },
};

/** Node status lists the images of every tenant's pods and the volumes attached for them. */
const NODE_STATUS_OF_OTHERS = ['images', 'volumesInUse', 'volumesAttached'] as const;

export const node: KindRule = {
  toUpstream: readOnly,
  toTenant(obj) {
    const status = objectAt(obj, 'status');
    if (status !== undefined) for (const field of NODE_STATUS_OF_OTHERS) delete status[field];
    return obj;
  },
};

/**
 * An APIService (`<version>.<group>`, one for every group version the apiserver serves) is seen exactly when the
 * tenant's discovery shows that group version: built-in groups as they are, the tenant's own CRD groups under its
 * names (name and spec.group), never another tenant's group, a hidden group (tenantgate's own included) nor a custom
 * group of nobody (a platform's aggregated API outside the table). Its service, if any, is the platform's: left as is.
 */
export const apiService: KindRule = {
  toUpstream: readOnly,
  toTenant(obj, ctx) {
    const metadata = objectAt(obj, 'metadata');
    const spec = objectAt(obj, 'spec');
    const version = spec === undefined ? undefined : stringAt(spec, 'version');
    if (metadata === undefined || spec === undefined || version === undefined) return null;
    const upstreamGroup = stringAt(spec, 'group') ?? ''; // the core group's (`v1.`) is left out
    const group = visibleGroup(upstreamGroup, ctx.tenant);
    if (group === null || ctx.servesTenantResources?.(upstreamGroup, version) === false) return null;
    // The apiserver names every APIService `<version>.<group>`; anything else is not judged by its name alone.
    const name = stringAt(metadata, 'name');
    if (name !== `${version}.${upstreamGroup}`) return null;
    metadata.name = groupVersionNameToTenant(name, ctx.tenant);
    if (upstreamGroup !== '') spec.group = group;
    return obj;
  },
};

export const hidden: KindRule = {
  toUpstream() {
    throw notFound('the server could not find the requested resource');
  },
  toTenant() {
    return null;
  },
};
