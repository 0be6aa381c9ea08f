// Kinds that are not the tenant's: shared ones are read as they are (nodes without what would tell of other
// tenants' volumes and images) and never written; hidden ones are never served at all.
import { StatusError } from '../../server/status.ts';
import { objectAt } from './json.ts';
import type { KindRule } from './rule.ts';

const readOnly = (): never => {
  throw new StatusError(403, 'Forbidden', 'this resource is shared by all tenants of this cluster and read-only');
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

export const hidden: KindRule = {
  toUpstream() {
    throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
  },
  toTenant() {
    return null;
  },
};
