// One typed configuration for `tenantgate serve`, from flags and TENANTGATE_* environment variables.
// Files are read here, once, so no stage reads the disk on the request path.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { DEFAULT_TENANT_STORE_OPTIONS, type TenantStoreOptions } from './tenants/store.ts';
import type { CertificateAuthority } from './auth/pki.ts';
import { DEFAULT_FLOW_CONTROL, type FlowControlOptions } from './flowcontrol/limits.ts';
import { inClusterCredentials, loadKubeconfig, type ClusterCredentials } from './upstream/kubeconfig.ts';
import { DEFAULT_TENANT_SERIES } from './metrics/metrics.ts';
import { LIST_OFFLOAD_MEASURED_BYTES, PROTOBUF_LIST_OFFLOAD_MEASURED_BYTES } from './request/offload.ts';
import { REQUEST_LOG_LEVELS, type RequestLogLevel } from './request/request-end.ts';
import type { CachedResourceId } from './watchcache/resource-cache.ts';
import { cachedResourcesOf, DEFAULT_CACHED_RESOURCES } from './watchcache/watch-cache.ts';

export interface ServeConfig {
  host: string;
  port: number;
  tls: { certPem: string; keyPem: string };
  /** CA that signs the client certificates tenantgate accepts. */
  clientCaPem: string;
  /** The client CA with its key: tenantgate then issues tenant admin kubeconfigs (Tenant API, `tenantgate tenant`). */
  tenantCa?: CertificateAuthority;
  /** Validity of the tenant admin certificates tenantgate issues (default 365 days). */
  tenantCertificateDays?: number;
  upstream: ClusterCredentials;
  /** Conversion off for good: the bench baseline. */
  passthrough: boolean;
  http2: {
    maxConcurrentStreams: number;
    maxHeaderListBytes: number;
  };
  /** Where tenants live; omitted: the embedded store. */
  tenantStore?: TenantStoreOptions;
  /** Prometheus metrics; omitted: none are kept. */
  metrics?: {
    /** The metrics listener's address; null: metrics are kept but not served. */
    listen: { host: string; port: number } | null;
    /** Tenants with a `tenant` label value of their own (first by name); the rest are `_other`. */
    tenantSeries: number;
  };
  /** Level of the one log line per request; omitted: 'off'. */
  requestLogLevel?: RequestLogLevel;
  /** Per-tenant seats and fair queuing; omitted: DEFAULT_FLOW_CONTROL. */
  flowControl?: FlowControlOptions;
  /** Hosts a tenant's webhook may name in clientConfig.url; omitted or empty: none (services only). */
  tenantWebhookUrlHosts?: readonly string[];
  /** Keep the upstream's `system:discovery` binding to system identities (tenants then read discovery through tenantgate only). */
  confineUpstreamDiscovery?: boolean;
  /** The shared watch cache: the resources it keeps; null: off (every list and watch upstream); omitted: the defaults. */
  watchCache?: { resources: readonly CachedResourceId[]; bookmarkIntervalMs?: number; upstreamIdleMs?: number } | null;
  /**
   * Where tenants' pods reach tenantgate, and the CA bundle that verifies its serving certificate: their in-cluster
   * clients are pointed here (lib/tenants/in-cluster-access.ts). Omitted: the listen address and the serving certificate;
   * null: tenants' pods are left as the upstream makes them.
   */
  inCluster?: { address?: { host: string; port: number }; caPem: string } | null;
  /** After SIGTERM: how long /readyz fails while it still serves (delayMs), then the longest wait for requests in flight (drainMs). */
  shutdown?: { delayMs: number; drainMs: number };
  /** JSON list answers at least this many bytes are rewritten on a worker thread (lib/request/offload.ts); 0: never. */
  listOffloadThresholdBytes?: number;
  /** The same for protobuf list answers. */
  protobufListOffloadThresholdBytes?: number;
}

/**
 * Every `serve` flag, its default and meaning. Each but --help is also the environment variable TENANTGATE_<FLAG>
 * (`--tls-cert-file`: TENANTGATE_TLS_CERT_FILE); a flag given wins over the variable, the variable over the default.
 * docs/configuration.md's table is made from this one (npm run docs; a unit test compares).
 */
export const SERVE_OPTIONS = {
  listen: { type: 'string', default: '127.0.0.1:6443', description: 'address:port to listen on' },
  'tls-cert-file': { type: 'string', description: 'serving certificate, PEM' },
  'tls-key-file': { type: 'string', description: 'serving key, PEM' },
  'client-ca-file': { type: 'string', description: 'CA of the client certificates to accept' },
  'client-ca-key-file': { type: 'string', description: "the client CA's key, to issue tenant kubeconfigs" },
  'tenant-certificate-days': { type: 'string', default: '365', description: 'validity of issued tenant admin certificates' },
  'upstream-kubeconfig': {
    type: 'string',
    description: "kubeconfig of the upstream kube-apiserver; none in a pod: the pod's service account",
  },
  passthrough: { type: 'boolean', default: false, description: 'forward without protocol conversion (bench baseline)' },
  'max-concurrent-streams': { type: 'string', default: '1000', description: 'HTTP/2 streams per client connection' },
  'max-header-bytes': { type: 'string', default: '65536', description: 'largest request header block accepted' },
  'etcd-endpoints': {
    type: 'string',
    description: 'comma-separated etcd client URLs for tenants; none: embedded store, one replica',
  },
  'etcd-prefix': { type: 'string', default: DEFAULT_TENANT_STORE_OPTIONS.etcdPrefix, description: 'etcd key prefix of the tenants' },
  'metrics-listen': {
    type: 'string',
    default: '127.0.0.1:9464',
    description: "address:port of the Prometheus /metrics listener; '' disables it",
  },
  'metrics-tenant-series': {
    type: 'string',
    default: String(DEFAULT_TENANT_SERIES),
    description: 'tenants with metrics series of their own (first by name); the rest are tenant="_other"',
  },
  'request-log-level': {
    type: 'string',
    default: 'info',
    description: `level of the one log line per request: ${REQUEST_LOG_LEVELS.join(', ')}`,
  },
  'max-inflight': {
    type: 'string',
    default: String(DEFAULT_FLOW_CONTROL.maxInflight),
    description: "seats for all tenants' requests together; past it they queue fairly",
  },
  'tenant-max-inflight': {
    type: 'string',
    default: String(DEFAULT_FLOW_CONTROL.tenantMaxInflight),
    description: 'read-only requests in flight per tenant, unless its Tenant says otherwise',
  },
  'tenant-max-mutating-inflight': {
    type: 'string',
    default: String(DEFAULT_FLOW_CONTROL.tenantMaxMutatingInflight),
    description: 'mutating requests in flight per tenant',
  },
  'tenant-queue-length': {
    type: 'string',
    default: String(DEFAULT_FLOW_CONTROL.tenantQueueLength),
    description: "a tenant's requests waiting for a seat; more get 429",
  },
  'tenant-max-watches': {
    type: 'string',
    default: String(DEFAULT_FLOW_CONTROL.tenantMaxWatches),
    description: 'open watches, exec, attach, port-forward, proxy and log requests per tenant, unless its Tenant says otherwise; more get 429',
  },
  'queue-wait': {
    type: 'string',
    default: `${DEFAULT_FLOW_CONTROL.queueWaitMs / 1000}s`,
    description: 'longest wait for a seat before 429, e.g. 5s or 500ms',
  },
  'tenant-webhook-url-hosts': {
    type: 'string',
    description: "comma-separated hosts tenants' admission webhooks may call by clientConfig.url; others must name a service",
  },
  'confine-upstream-discovery': {
    type: 'boolean',
    default: false,
    description: "bind the upstream's system:discovery to system identities only, so tenant tokens used directly upstream see no API groups",
  },
  'watch-cache': {
    type: 'string',
    default: 'true',
    description: "serve tenants' watches and resourceVersion=0 lists from one upstream watch per resource; false: each watch its own upstream watch",
  },
  'watch-cache-resources': {
    type: 'string',
    default: DEFAULT_CACHED_RESOURCES.join(','),
    description: 'resources the watch cache keeps, resource[.group], comma-separated',
  },
  'watch-cache-bookmark-interval': {
    type: 'string',
    default: '60s',
    description: 'time between two bookmarks to a cached watch that allows them (the apiserver: 1 minute)',
  },
  'watch-cache-upstream-idle': {
    type: 'string',
    default: '75s',
    description: "how long the cache's upstream watch may be silent before its connection must answer a ping (the apiserver bookmarks every minute)",
  },
  'in-cluster-address': {
    type: 'string',
    description: "host:port where tenants' pods reach tenantgate (its Service); '' leaves their pods talking to the upstream; default: the listen address",
  },
  'in-cluster-ca-file': {
    type: 'string',
    description: "CA bundle, PEM, that verifies tenantgate's serving certificate, given to tenants' pods; default: --tls-cert-file",
  },
  'shutdown-delay': {
    type: 'string',
    default: '0s',
    description: 'after SIGTERM, how long /readyz fails while tenantgate still serves, so Services drop it first',
  },
  'shutdown-drain': {
    type: 'string',
    default: '30s',
    description: 'then the longest wait for requests in flight before the rest are cut',
  },
  'list-offload-threshold': {
    type: 'string',
    default: String(LIST_OFFLOAD_MEASURED_BYTES),
    description: `JSON list answers at least this many bytes are rewritten on a worker thread, so one huge list does not stall other tenants' requests; 0: never`,
  },
  'protobuf-list-offload-threshold': {
    type: 'string',
    default: String(PROTOBUF_LIST_OFFLOAD_MEASURED_BYTES),
    description: `the same for protobuf list answers; 0 (the default): never, the hop costs more than the rewrite`,
  },
  help: { type: 'boolean', short: 'h', default: false, description: 'show this help' },
} as const;

/** The environment variable of a `serve` flag. */
export function environmentVariableOf(flag: string): string {
  return `TENANTGATE_${flag.toUpperCase().replaceAll('-', '_')}`;
}

function fromEnv(flag: string): string | undefined {
  return process.env[environmentVariableOf(flag)];
}

type ServeFlag = Exclude<keyof typeof SERVE_OPTIONS, 'help'>;

/** What parseArgs reads: the flags without their defaults, so a flag not given can fall back to its variable. */
const SERVE_PARSE_OPTIONS = Object.fromEntries(
  Object.entries(SERVE_OPTIONS).map(([name, option]) => [name, { type: option.type, ...('short' in option && { short: option.short }) }]),
) as { [flag in keyof typeof SERVE_OPTIONS]: { type: (typeof SERVE_OPTIONS)[flag]['type'] } };

/** A string flag's value: given, else its environment variable, else its default (undefined when it has none). */
function settingOf(values: Record<string, unknown>, flag: ServeFlag): string | undefined {
  const given = values[flag];
  if (typeof given === 'string') return given;
  const option = SERVE_OPTIONS[flag] as { default?: unknown };
  return fromEnv(flag) ?? (typeof option.default === 'string' ? option.default : undefined);
}

/** A boolean flag: given, or its environment variable `true`. */
function switchOf(values: Record<string, unknown>, flag: ServeFlag): boolean {
  return values[flag] === true || fromEnv(flag) === 'true';
}

function required(values: Record<string, unknown>, flag: ServeFlag): string {
  const value = settingOf(values, flag);
  if (value === undefined || value === '') throw new Error(`--${flag} is required`);
  return value;
}

function requestLogLevel(value: string): RequestLogLevel {
  if (!(REQUEST_LOG_LEVELS as readonly string[]).includes(value))
    throw new Error(`--request-log-level must be one of ${REQUEST_LOG_LEVELS.join(', ')}, got ${value}`);
  return value as RequestLogLevel;
}

function positiveInteger(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${flag} must be a positive integer, got ${value}`);
  return n;
}

function nonNegativeInteger(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || value.trim() === '') throw new Error(`--${flag} must be a non-negative integer, got ${value}`);
  return n;
}

/** `a, b,,c` → ['a', 'b', 'c']. */
function commaList(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** `5s`, `500ms` or a number of seconds → milliseconds. */
export function parseDurationMs(value: string, flag: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s)?\s*$/.exec(value);
  if (match === null) throw new Error(`--${flag} must be a duration such as 5s or 500ms, got ${value}`);
  const ms = Number(match[1]) * (match[2] === 'ms' ? 1 : 1000);
  if (ms <= 0) throw new Error(`--${flag} must be longer than zero, got ${value}`);
  return ms;
}

function flowControlOf(values: Record<string, unknown>): FlowControlOptions {
  const get = (flag: ServeFlag) => settingOf(values, flag)!;
  return {
    maxInflight: positiveInteger(get('max-inflight'), 'max-inflight'),
    tenantMaxInflight: positiveInteger(get('tenant-max-inflight'), 'tenant-max-inflight'),
    tenantMaxMutatingInflight: positiveInteger(get('tenant-max-mutating-inflight'), 'tenant-max-mutating-inflight'),
    tenantQueueLength: nonNegativeInteger(get('tenant-queue-length'), 'tenant-queue-length'),
    queueWaitMs: parseDurationMs(get('queue-wait'), 'queue-wait'),
    tenantMaxWatches: positiveInteger(get('tenant-max-watches'), 'tenant-max-watches'),
  };
}

export function parseListen(listen: string, flag = 'listen'): { host: string; port: number } {
  const colon = listen.lastIndexOf(':');
  if (colon === -1) throw new Error(`--${flag} ${listen}: expected address:port`);
  const host = listen.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(listen.slice(colon + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--${flag} ${listen}: bad port`);
  return { host, port };
}

/** Like parseDurationMs, and zero is allowed (`0s`: no wait). */
function parseDurationOrZeroMs(value: string, flag: string): number {
  return /^\s*0+(\.0+)?\s*(ms|s)?\s*$/.test(value) ? 0 : parseDurationMs(value, flag);
}

/** The in-cluster address and CA: '' for the address turns it off; without a CA file, the serving certificate's. */
function inClusterOf(address: string | undefined, caFile: string | undefined, servingCertPem: string): ServeConfig['inCluster'] {
  if (address === '') return null;
  const parsed = address === undefined ? undefined : parseListen(address, 'in-cluster-address');
  if (parsed?.host === '' || parsed?.port === 0) throw new Error(`--in-cluster-address ${address}: expected host:port`);
  return {
    address: parsed,
    caPem: caFile === undefined || caFile === '' ? servingCertPem : readFileSync(caFile, 'utf8'),
  };
}

/** `--watch-cache` alone means on, as a boolean flag would (its value form takes `=false`). */
function watchCacheOf(value: string, resources: string, bookmarkInterval: string, upstreamIdle: string): ServeConfig['watchCache'] {
  if (value !== 'true' && value !== 'false') throw new Error(`--watch-cache must be true or false, not ${JSON.stringify(value)}`);
  if (value === 'false') return null;
  return {
    resources: cachedResourcesOf(commaList(resources)),
    bookmarkIntervalMs: parseDurationMs(bookmarkInterval, 'watch-cache-bookmark-interval'),
    upstreamIdleMs: parseDurationMs(upstreamIdle, 'watch-cache-upstream-idle'),
  };
}

export function parseServeConfig(args: string[]): ServeConfig | 'help' {
  args = args.map((arg) => (arg === '--watch-cache' ? '--watch-cache=true' : arg));
  const { values } = parseArgs({ args, options: SERVE_PARSE_OPTIONS, strict: true, allowPositionals: false });
  if (values.help === true) return 'help';
  const get = (flag: ServeFlag) => settingOf(values, flag);
  const clientCaPem = readFileSync(required(values, 'client-ca-file'), 'utf8');
  const caKeyFile = get('client-ca-key-file');
  const metricsListen = get('metrics-listen')!;
  const certPem = readFileSync(required(values, 'tls-cert-file'), 'utf8');
  const upstreamKubeconfig = get('upstream-kubeconfig');
  return {
    ...parseListen(get('listen')!),
    tls: { certPem, keyPem: readFileSync(required(values, 'tls-key-file'), 'utf8') },
    clientCaPem,
    tenantCa: caKeyFile === undefined || caKeyFile === '' ? undefined : { certPem: clientCaPem, keyPem: readFileSync(caKeyFile, 'utf8') },
    tenantCertificateDays: positiveInteger(get('tenant-certificate-days')!, 'tenant-certificate-days'),
    upstream: upstreamKubeconfig === undefined || upstreamKubeconfig === '' ? inClusterCredentials() : loadKubeconfig(upstreamKubeconfig),
    passthrough: switchOf(values, 'passthrough'),
    http2: {
      maxConcurrentStreams: positiveInteger(get('max-concurrent-streams')!, 'max-concurrent-streams'),
      maxHeaderListBytes: positiveInteger(get('max-header-bytes')!, 'max-header-bytes'),
    },
    tenantStore: {
      etcdEndpoints: commaList(get('etcd-endpoints') ?? ''),
      etcdPrefix: get('etcd-prefix')!,
    },
    metrics: {
      listen: metricsListen === '' ? null : parseListen(metricsListen),
      tenantSeries: nonNegativeInteger(get('metrics-tenant-series')!, 'metrics-tenant-series'),
    },
    requestLogLevel: requestLogLevel(get('request-log-level')!),
    flowControl: flowControlOf(values),
    tenantWebhookUrlHosts: commaList(get('tenant-webhook-url-hosts') ?? '').map((host) => host.toLowerCase()),
    confineUpstreamDiscovery: switchOf(values, 'confine-upstream-discovery'),
    watchCache: watchCacheOf(get('watch-cache')!, get('watch-cache-resources')!, get('watch-cache-bookmark-interval')!, get('watch-cache-upstream-idle')!),
    inCluster: inClusterOf(get('in-cluster-address'), get('in-cluster-ca-file'), certPem),
    shutdown: {
      delayMs: parseDurationOrZeroMs(get('shutdown-delay')!, 'shutdown-delay'),
      drainMs: parseDurationOrZeroMs(get('shutdown-drain')!, 'shutdown-drain'),
    },
    listOffloadThresholdBytes: nonNegativeInteger(get('list-offload-threshold')!, 'list-offload-threshold'),
    protobufListOffloadThresholdBytes: nonNegativeInteger(get('protobuf-list-offload-threshold')!, 'protobuf-list-offload-threshold'),
  };
}

/**
 * The `serve` flags as a Markdown table (flag, environment variable, default, meaning): what docs/configuration.md
 * carries between its `serve-flags` markers.
 */
export function serveFlagsTable(): string {
  const cell = (text: string) => text.replaceAll('|', '\\|');
  const rows = Object.entries(SERVE_OPTIONS)
    .filter(([name]) => name !== 'help')
    .map(([name, option]) => {
      const dflt: unknown = (option as { default?: unknown }).default;
      const shown = dflt === undefined ? '' : dflt === '' ? "`''`" : `\`${String(dflt)}\``;
      return `| \`--${name}\` | \`${environmentVariableOf(name)}\` | ${shown} | ${cell(option.description)} |`;
    });
  return ['| flag | environment | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** `--flag  description` lines for a command's help. */
export function describeOptions(options: Record<string, { type: string; description: string; default?: unknown }>, fromEnvironment = false): string {
  return Object.entries(options)
    .map(([name, o]) => {
      const flag = `--${name}${o.type === 'string' ? ' VALUE' : ''}`;
      const dflt = o.default === undefined || o.default === false ? '' : ` (default ${String(o.default)})`;
      const variable = fromEnvironment && name !== 'help' ? ` [${environmentVariableOf(name)}]` : '';
      return `  ${flag.padEnd(30)} ${o.description}${dflt}${variable}`;
    })
    .join('\n');
}
