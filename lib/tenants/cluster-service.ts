// Service `default/kubernetes` of every tenant, as any cluster has it, with its EndpointSlice pointing at tenantgate:
// the one place that decides tenantgate's address as a tenant's workloads reach it.
// Never points a tenant's Service anywhere but at tenantgate, and never writes an address the apiserver would refuse.
import { isIPv4, isIPv6 } from 'node:net';
import { builtinKindOf, type KindRow } from '../convert/kinds.ts';
import { toUpstreamName, type TenantId } from '../convert/prefix.ts';
import { objectToUpstream, type Json } from '../convert/rules/index.ts';
import { listUpstream } from '../upstream/own-watch.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { differs, ensure, type UpstreamObject } from './bootstrap.ts';

/** Where a tenant's workloads reach tenantgate. */
export interface ClusterAddress {
  host: string;
  port: number;
}

/**
 * tenantgate's address as tenants' workloads reach it: `--in-cluster-address` when given, else where it listens.
 * `0.0.0.0`/`::` name no address a client can use: the Service is then left without an EndpointSlice.
 */
export function inClusterAddress(listen: ClusterAddress, configured?: ClusterAddress): ClusterAddress {
  return configured ?? { host: listen.host, port: listen.port };
}

export const KUBERNETES_SERVICE = 'kubernetes';
/** Marks the EndpointSlice as tenantgate's: the upstream's EndpointSlice controllers leave slices of other managers alone. */
export const ENDPOINT_SLICE_MANAGER = 'tenantgate.kubezoo.io';

const SERVICE_ROW = builtinKindOf('', 'Service') as KindRow;
const ENDPOINT_SLICE_ROW = builtinKindOf('discovery.k8s.io', 'EndpointSlice') as KindRow;
const NO_DISCOVERY = { scopeOf: () => undefined, kindScope: () => undefined };

/** The Service every cluster has in `default`: port 443 `https`, no selector (its endpoints are written, not found). */
export function kubernetesService(tenant: TenantId, address: ClusterAddress): UpstreamObject {
  const service: Json = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: KUBERNETES_SERVICE, namespace: 'default', labels: { component: 'apiserver', provider: 'kubernetes' } },
    spec: { type: 'ClusterIP', sessionAffinity: 'None', ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: address.port }] },
  };
  return objectToUpstream(service, { tenant, ...NO_DISCOVERY }, SERVICE_ROW) as UpstreamObject;
}

/**
 * Why the apiserver would refuse an endpoint at `host` (EndpointSlice validation: an IP, not loopback, link-local,
 * multicast or unspecified), or null when it takes it. Hostnames are refused too: FQDN slices are deprecated.
 */
export function endpointRefusal(host: string): string | null {
  if (isIPv4(host)) {
    const [a, b] = host.split('.').map(Number) as [number, number];
    if (a === 127) return 'a loopback address';
    if (a === 0) return 'an unspecified address';
    if (a === 169 && b === 254) return 'a link-local address';
    if (a >= 224 && a <= 239) return 'a multicast address';
    return null;
  }
  if (isIPv6(host)) {
    const lower = host.toLowerCase();
    if (lower === '::1') return 'a loopback address';
    if (lower === '::') return 'an unspecified address';
    if (/^fe[89ab]/.test(lower)) return 'a link-local address';
    if (lower.startsWith('ff')) return 'a multicast address';
    return null;
  }
  return 'not an IP address';
}

/** The Service's EndpointSlice, or null when the apiserver would refuse the address (see endpointRefusal). */
export function kubernetesEndpointSlice(tenant: TenantId, address: ClusterAddress): UpstreamObject | null {
  if (endpointRefusal(address.host) !== null) return null;
  const slice: Json = {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: KUBERNETES_SERVICE,
      namespace: 'default',
      labels: { 'kubernetes.io/service-name': KUBERNETES_SERVICE, 'endpointslice.kubernetes.io/managed-by': ENDPOINT_SLICE_MANAGER },
    },
    addressType: isIPv4(address.host) ? 'IPv4' : 'IPv6',
    endpoints: [{ addresses: [address.host], conditions: { ready: true } }],
    ports: [{ name: 'https', port: address.port, protocol: 'TCP' }],
  };
  return objectToUpstream(slice, { tenant, ...NO_DISCOVERY }, ENDPOINT_SLICE_ROW) as UpstreamObject;
}

/** Creates (or confirms) the tenant's Service `default/kubernetes` and, where the address allows, its EndpointSlice. */
export async function ensureKubernetesService(pool: UpstreamPool, tenant: TenantId, address: ClusterAddress): Promise<void> {
  const namespace = toUpstreamName('default', tenant);
  await ensure(pool, `/api/v1/namespaces/${namespace}/services`, kubernetesService(tenant, address));
  const slice = kubernetesEndpointSlice(tenant, address);
  if (slice !== null) await ensure(pool, `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`, slice);
}

/**
 * The tenants (of `ids`, labelled as `bySelector` selects) whose Service default/kubernetes is missing upstream or
 * whose EndpointSlice is missing or points elsewhere: two lists, whatever the number of tenants.
 */
export async function kubernetesServicesAmiss(pool: UpstreamPool, address: ClusterAddress, ids: readonly TenantId[], bySelector: string): Promise<TenantId[]> {
  const byName = `fieldSelector=${encodeURIComponent(`metadata.name=${KUBERNETES_SERVICE}`)}&${bySelector}`;
  const services = new Set((await listUpstream(pool, `/api/v1/services?${byName}`)).map((item) => item.metadata.namespace));
  const slices = new Map((await listUpstream(pool, `/apis/discovery.k8s.io/v1/endpointslices?${byName}`)).map((item) => [item.metadata.namespace, item]));
  return ids.filter((id) => {
    const namespace = toUpstreamName('default', id);
    const wanted = kubernetesEndpointSlice(id, address);
    const slice = slices.get(namespace);
    return !services.has(namespace) || (wanted !== null && (slice === undefined || differs(slice, wanted)));
  });
}
