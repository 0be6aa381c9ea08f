// Endpoints and EndpointSlices point at the pods behind a Service: their targetRefs are references into the tenant's namespaces.
import { objectReferencesRule } from './references.ts';

export const endpoints = objectReferencesRule([
  ['subsets', '*', 'addresses', '*', 'targetRef'],
  ['subsets', '*', 'notReadyAddresses', '*', 'targetRef'],
]);

export const endpointSlice = objectReferencesRule([['endpoints', '*', 'targetRef']]);
