// Tenant A attacks tenant B and the upstream with over 10,000 generated requests (certificate and service-account
// token, HTTP/2 and HTTP/1.1, JSON and protobuf); no canary of B's or the upstream's may reach any byte A receives,
// and afterwards, read straight from the upstream, nothing of B changed and everything A made carries A's prefix.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { exampleCrd } from '../helpers/fixtures.ts';
import {
  AttackClient,
  findLeaks,
  Oracle,
  protobufBinding,
  protobufConfigMap,
  runBounded,
  sentText,
  type AttackRequest,
  type Canary,
  type Credential,
  type Hit,
  type Protocol,
} from '../helpers/adversary.ts';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { CLUSTER_SUBJECT_PREFIX } from '../../lib/convert/rules/cluster-subjects.ts';
import { upstreamJson } from '../../lib/upstream/client.ts';
import { loadKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { UpstreamPool } from '../../lib/upstream/pool.ts';

const A = 'alfa01';
const B = 'brvo02';
const CONCURRENCY = 64;
const WATCH_READ_MS = 1000;
const LEAKS_SHOWN_PER_CLASS = 3;
const RBAC = 'rbac.authorization.k8s.io';

/** A random string nobody could guess: every canary is one. */
const secretWord = () => 'cnry' + randomBytes(10).toString('hex');

/** The random names and values planted in B's objects and the upstream's kube-system. */
const planted = {
  namespace: secretWord(),
  configMap: secretWord(),
  configMapValue: secretWord(),
  labelValue: secretWord(),
  annotationValue: secretWord(),
  secret: secretWord(),
  secretValue: secretWord(),
  serviceAccount: secretWord(),
  serviceAccountNote: secretWord(),
  role: secretWord(),
  roleResourceName: secretWord(),
  roleBinding: secretWord(),
  boundUser: secretWord(),
  event: secretWord(),
  eventMessage: secretWord(),
  clusterRole: secretWord(),
  clusterRoleLabel: secretWord(),
  group: secretWord(),
  schemaField: secretWord(),
  schemaDescription: secretWord(),
  customResource: secretWord(),
  customResourceValue: secretWord(),
  upstreamConfigMap: secretWord(),
  upstreamConfigMapValue: secretWord(),
  upstreamSecret: secretWord(),
  upstreamSecretValue: secretWord(),
};
const GROUP = `${planted.group}.io`;
const B_DEFAULT = `${B}-default`;
const B_NAMESPACES = [B_DEFAULT, `${B}-${planted.namespace}`];

let stack: Stack;
let alfa: TestTenant;
let bravo: TestTenant;
let upstream: UpstreamPool;
const canaries: Canary[] = [];
/** B's objects (and the upstream's canaries) as the upstream held them before the attack, by upstream path. */
const before = new Map<string, any>();
let attackerToken = '';
let bravoToken = '';
let upstreamContinueTokens: string[] = [];
let bravoResourceVersion = '';
let uidOfBravoConfigMap = '';

const up = async (method: string, path: string, body?: unknown, headers?: Record<string, string>) => {
  const answer = await upstreamJson(upstream, method, path, body, headers);
  if (answer.status >= 300) throw new Error(`upstream ${method} ${path}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
  return answer.body;
};

async function kubectlOk(tenant: TestTenant | null, args: string[], input?: string): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const r = tenant === null ? await stack.kubectlDirect(args, { input }) : await tenant.kubectl(args, { input });
    if (r.code === 0) return r.stdout;
    // a new CRD or service account takes a moment to be served; anything else is an error at once
    if (attempt >= 40 || !/not found|could not find|no matches for kind/i.test(r.stderr))
      throw new Error(`${tenant?.id ?? 'upstream'}: kubectl ${args.join(' ')}: ${r.stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const list = (items: object[]) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });

function bravoObjects(namespace: string): object[] {
  const meta = (name: string) => ({
    name,
    namespace,
    labels: { 'canary.example.com/tag': planted.labelValue },
    annotations: { 'canary.example.com/note': planted.annotationValue },
  });
  return [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(planted.configMap), data: { key: planted.configMapValue } },
    { apiVersion: 'v1', kind: 'Secret', metadata: meta(planted.secret), stringData: { key: planted.secretValue } },
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { ...meta(planted.serviceAccount), annotations: { 'canary.example.com/note': planted.serviceAccountNote } },
    },
    {
      apiVersion: `${RBAC}/v1`,
      kind: 'Role',
      metadata: meta(planted.role),
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames: [planted.roleResourceName] }],
    },
    {
      apiVersion: `${RBAC}/v1`,
      kind: 'RoleBinding',
      metadata: meta(planted.roleBinding),
      subjects: [{ apiGroup: RBAC, kind: 'User', name: planted.boundUser }],
      roleRef: { apiGroup: RBAC, kind: 'Role', name: planted.role },
    },
    {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: meta(planted.event),
      involvedObject: { apiVersion: 'v1', kind: 'ConfigMap', name: planted.configMap, namespace },
      reason: 'Canary',
      message: planted.eventMessage,
      type: 'Normal',
    },
  ];
}

function vaultCrd() {
  const crd: any = exampleCrd('Vault', 'vaults');
  crd.metadata.name = `vaults.${GROUP}`;
  crd.spec.group = GROUP;
  crd.spec.versions[0].schema.openAPIV3Schema.properties.spec = {
    type: 'object',
    properties: { [planted.schemaField]: { type: 'string', description: planted.schemaDescription } },
  };
  return crd;
}

/** B's canary objects as the upstream names them: reread after the attack and compared. */
function guardedPaths(): string[] {
  const paths = [`/api/v1/namespaces/${B_DEFAULT}`, `/api/v1/namespaces/${B}-${planted.namespace}`];
  for (const ns of B_NAMESPACES) {
    paths.push(
      `/api/v1/namespaces/${ns}/configmaps/${planted.configMap}`,
      `/api/v1/namespaces/${ns}/secrets/${planted.secret}`,
      `/api/v1/namespaces/${ns}/serviceaccounts/${planted.serviceAccount}`,
      `/api/v1/namespaces/${ns}/events/${planted.event}`,
      `/apis/${RBAC}/v1/namespaces/${ns}/roles/${planted.role}`,
      `/apis/${RBAC}/v1/namespaces/${ns}/rolebindings/${planted.roleBinding}`,
    );
  }
  paths.push(
    `/apis/${RBAC}/v1/clusterroles/${B}-${planted.clusterRole}`,
    `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/vaults.${B}-${GROUP}`,
    `/apis/${B}-${GROUP}/v1/namespaces/${B_DEFAULT}/vaults/${planted.customResource}`,
    `/api/v1/namespaces/kube-system/configmaps/${planted.upstreamConfigMap}`,
    `/api/v1/namespaces/kube-system/secrets/${planted.upstreamSecret}`,
  );
  return paths;
}

/** Upstream collections whose new objects must all be A's after the attack (Events are the controllers' business). */
const COLLECTIONS = [
  '/api/v1/namespaces',
  '/api/v1/configmaps',
  '/api/v1/secrets',
  '/api/v1/serviceaccounts',
  `/apis/${RBAC}/v1/roles`,
  `/apis/${RBAC}/v1/rolebindings`,
  `/apis/${RBAC}/v1/clusterroles`,
  `/apis/${RBAC}/v1/clusterrolebindings`,
  // Where a tenant's ClusterRoleBindings are kept: tenantgate's custom resources.
  '/apis/rbac.tenantgate.kubezoo.io/v1/clusterrolebindings',
  '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
];

async function upstreamObjects(): Promise<Map<string, any>> {
  const objects = new Map<string, any>();
  for (const path of COLLECTIONS) {
    const body = await up('GET', path);
    for (const item of body.items) objects.set(item.metadata.uid, { ...item, collection: path });
  }
  return objects;
}
let objectsBefore: Map<string, any>;

t.before(async () => {
  stack = await startStack();
  [alfa, bravo] = await Promise.all([createTestTenant(stack, A), createTestTenant(stack, B)]);
  upstream = new UpstreamPool(loadKubeconfig(stack.upstreamKubeconfig));

  // B's canaries, made by B through tenantgate as any tenant makes objects
  await kubectlOk(
    bravo,
    ['apply', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: planted.namespace, labels: { 'canary.example.com/tag': planted.labelValue } } }),
  );
  await kubectlOk(bravo, ['apply', '-f', '-'], list([...bravoObjects('default'), ...bravoObjects(planted.namespace)]));
  await kubectlOk(
    bravo,
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: `${RBAC}/v1`,
      kind: 'ClusterRole',
      metadata: { name: planted.clusterRole, labels: { 'canary.example.com/tag': planted.clusterRoleLabel } },
      rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: [planted.roleResourceName] }],
    }),
  );
  await kubectlOk(bravo, ['apply', '-f', '-'], JSON.stringify(vaultCrd()));
  await kubectlOk(bravo, ['wait', '--for=condition=Established', `crd/vaults.${GROUP}`, '--timeout=60s']);
  await kubectlOk(
    bravo,
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: `${GROUP}/v1`,
      kind: 'Vault',
      metadata: { name: planted.customResource, namespace: 'default', labels: { 'canary.example.com/tag': planted.labelValue } },
      spec: { [planted.schemaField]: planted.customResourceValue },
    }),
  );
  // the upstream's own canaries, in its kube-system
  await kubectlOk(
    null,
    ['apply', '-f', '-'],
    list([
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: planted.upstreamConfigMap, namespace: 'kube-system' },
        data: { key: planted.upstreamConfigMapValue },
      },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: planted.upstreamSecret, namespace: 'kube-system' },
        stringData: { key: planted.upstreamSecretValue },
      },
    ]),
  );

  // the attacker: A's admin certificate, and a token of A's own service account, admin of A's namespaces
  await kubectlOk(alfa, ['create', 'serviceaccount', 'attacker']);
  for (const namespace of ['default', 'kube-system']) {
    await kubectlOk(
      alfa,
      ['apply', '-f', '-'],
      list([
        {
          apiVersion: `${RBAC}/v1`,
          kind: 'Role',
          metadata: { name: 'attacker-all', namespace },
          rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
        },
        {
          apiVersion: `${RBAC}/v1`,
          kind: 'RoleBinding',
          metadata: { name: 'attacker-all', namespace },
          subjects: [{ kind: 'ServiceAccount', name: 'attacker', namespace: 'default' }],
          roleRef: { apiGroup: RBAC, kind: 'Role', name: 'attacker-all' },
        },
      ]),
    );
  }
  attackerToken = (await kubectlOk(alfa, ['create', 'token', 'attacker', '--duration=1h'])).trim();
  await kubectlOk(alfa, ['create', 'configmap', 'own', '--from-literal=a=b']);

  // what only the upstream's administrator could hand out: a token of B's service account (A only ever asks a
  // TokenReview about it) and the upstream's own continue tokens
  const tokenRequest = await up('POST', `/api/v1/namespaces/${B_DEFAULT}/serviceaccounts/${planted.serviceAccount}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  });
  bravoToken = tokenRequest.status.token;
  const continueOf = async (path: string) => String((await up('GET', path)).metadata?.continue ?? '');
  upstreamContinueTokens = (
    await Promise.all([
      continueOf(`/api/v1/namespaces/${B_DEFAULT}/configmaps?limit=1`),
      continueOf(`/api/v1/namespaces/${B}-${planted.namespace}/configmaps?limit=1`),
      continueOf('/api/v1/configmaps?limit=1'),
      continueOf('/api/v1/secrets?limit=1'),
      continueOf(`/apis/${RBAC}/v1/clusterroles?limit=1`),
      continueOf('/api/v1/namespaces?limit=1'),
    ])
  ).filter((token) => token !== '');

  // canaries: every random value, every name, every uid of B's and the upstream's objects
  for (const [key, value] of Object.entries(planted)) canaries.push({ value, what: `canary ${key}` });
  for (const value of [planted.secretValue, planted.upstreamSecretValue])
    canaries.push({ value: Buffer.from(value).toString('base64'), what: 'a secret value, base64' });
  for (const path of guardedPaths()) {
    const object = await up('GET', path);
    before.set(path, object);
    canaries.push({ value: object.metadata.uid, what: `uid of ${path}` });
  }
  bravoResourceVersion = before.get(`/api/v1/namespaces/${B_DEFAULT}/configmaps/${planted.configMap}`).metadata.resourceVersion;
  uidOfBravoConfigMap = before.get(`/api/v1/namespaces/${B_DEFAULT}/configmaps/${planted.configMap}`).metadata.uid;
  objectsBefore = await upstreamObjects();
});

t.teardown(async () => {
  upstream?.close();
  await stack?.stop();
});

// ---- the generator: attack classes, each a list of base requests, each sent over every protocol and credential

interface Base {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: Buffer | string | object;
  contentType?: string;
  streamMs?: number;
}

interface Spread {
  protocols?: Protocol[];
  credentials?: Credential[];
  /** JSON and protobuf answers asked for, unless the class says otherwise */
  accepts?: (keyof typeof ACCEPT)[];
}

const HOP_BY_HOP = new Set(['connection', 'upgrade', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'http2-settings']);
const ACCEPT = {
  json: 'application/json',
  protobuf: 'application/vnd.kubernetes.protobuf,application/json',
  // Media types as a class of their own: answers written as YAML, CBOR refused or fallen back from, unknown parameters.
  yaml: 'application/yaml',
  cbor: 'application/cbor',
  cborFirst: 'application/json;q=0.9,application/cbor;q=1',
  unknownParameters: 'application/json;drop=metadata.managedFields;stream=watch',
};
let gzipTurn = 0;

function expand(attackClass: string, bases: Base[], spread: Spread = {}): AttackRequest[] {
  const requests: AttackRequest[] = [];
  for (const base of bases) {
    const headerNames = Object.keys(base.headers ?? {}).map((name) => name.toLowerCase());
    // HTTP/2 cannot carry connection-specific headers: those tricks are HTTP/1.1's
    const protocols = headerNames.some((name) => HOP_BY_HOP.has(name)) ? ['h1' as const] : (spread.protocols ?? ['h2', 'h1']);
    const body =
      base.body === undefined
        ? undefined
        : Buffer.isBuffer(base.body)
          ? base.body
          : Buffer.from(typeof base.body === 'string' ? base.body : JSON.stringify(base.body));
    for (const protocol of protocols) {
      for (const credential of spread.credentials ?? ['cert', 'token']) {
        for (const accept of spread.accepts ?? ['json', 'protobuf']) {
          const headers: Record<string, string> = { accept: ACCEPT[accept], ...base.headers };
          if (body !== undefined) headers['content-type'] = base.contentType ?? 'application/json';
          if (++gzipTurn % 3 === 0) headers['accept-encoding'] = 'gzip'; // every third answer may come compressed
          requests.push({ attackClass, protocol, credential, method: base.method ?? 'GET', path: base.path, headers, body, streamMs: base.streamMs });
        }
      }
    }
  }
  return requests;
}

const enc = encodeURIComponent;
const q = (params: Record<string, string>) => '?' + new URLSearchParams(params).toString();

/** Namespaces an attacker might try to reach B's or the upstream's with. */
function craftedNamespaces(): string[] {
  return [
    B_DEFAULT,
    `${B}-${planted.namespace}`,
    `${A}-${B_DEFAULT}`,
    `${A}-${B}-${planted.namespace}`,
    `${B}%2Ddefault`,
    `${B_DEFAULT}%2F`,
    `%2F${B_DEFAULT}`,
    '..',
    '%2e%2e',
    '%2E%2E',
    `..%2F${B_DEFAULT}`,
    `default%2F..%2F${B_DEFAULT}`,
    `default%2F..%2F..%2Fnamespaces%2F${B_DEFAULT}`,
    enc(`${B}-d\u0435fault`), // Cyrillic e
    enc(`${B}\uff0ddefault`), // fullwidth hyphen-minus
    enc(`${B}\u2010default`), // Unicode hyphen
    `${B.toUpperCase()}-DEFAULT`,
    `${B_DEFAULT}.`,
    `${B_DEFAULT}%20`,
    `${B_DEFAULT}%00`,
    'a'.repeat(300),
    `${B}-${'d'.repeat(70)}`,
    'kube-system',
    `${A}-kube-system`,
    '-kube-system',
    '%2Fkube-system',
    '..%2Fkube-system',
    'kube-system.',
    'KUBE-SYSTEM',
    enc('kube\u2013system'),
    'default%2F..%2Fkube-system',
  ];
}

function namespacedTargets(ns: string): string[] {
  return [
    `/api/v1/namespaces/${ns}`,
    `/api/v1/namespaces/${ns}/configmaps`,
    `/api/v1/namespaces/${ns}/configmaps/${planted.configMap}`,
    `/api/v1/namespaces/${ns}/configmaps/${planted.upstreamConfigMap}`,
    `/api/v1/namespaces/${ns}/secrets`,
    `/api/v1/namespaces/${ns}/secrets/${planted.secret}`,
    `/api/v1/namespaces/${ns}/serviceaccounts`,
    `/api/v1/namespaces/${ns}/events`,
    `/apis/events.k8s.io/v1/namespaces/${ns}/events`,
    `/apis/${RBAC}/v1/namespaces/${ns}/rolebindings`,
    `/apis/${GROUP}/v1/namespaces/${ns}/vaults`,
    `/apis/${B}-${GROUP}/v1/namespaces/${ns}/vaults/${planted.customResource}`,
  ];
}

function craftedNames(): Base[] {
  const bases: Base[] = craftedNamespaces().flatMap((ns) => namespacedTargets(ns).map((path) => ({ path })));
  const clusterRoleNames = [
    planted.clusterRole,
    `${B}-${planted.clusterRole}`,
    `${A}-${B}-${planted.clusterRole}`,
    `..%2F${B}-${planted.clusterRole}`,
    `${B}-${planted.clusterRole}%2F`,
    `${B}%2D${planted.clusterRole}`,
    `${B}-${planted.clusterRole}.`,
    enc(`${B}\uff0d${planted.clusterRole}`),
    `${B.toUpperCase()}-${planted.clusterRole}`,
    'system:controller:namespace-controller',
    '..',
    '%2e%2e%2f..%2fclusterroles',
  ];
  for (const name of clusterRoleNames) bases.push({ path: `/apis/${RBAC}/v1/clusterroles/${name}` });
  for (const name of [`vaults.${GROUP}`, `vaults.${B}-${GROUP}`, `vaults.${A}-${B}-${GROUP}`, `vaults.${B}%2D${GROUP}`, `vaults.${B}-${GROUP}.`]) {
    bases.push({ path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}` });
  }
  // B's CRD group has an APIService upstream, `v1.<B>-<group>`: a shared kind, seen only under B's own names.
  for (const name of [`v1.${GROUP}`, `v1.${B}-${GROUP}`, `v1.${A}-${B}-${GROUP}`, `v1.${B}%2D${GROUP}`, `v1.${B}-${GROUP}/status`, `v1.${GROUP}/status`]) {
    bases.push({ path: `/apis/apiregistration.k8s.io/v1/apiservices/${name}` });
  }
  for (const name of [
    `..%2F..%2F${B_DEFAULT}%2Fconfigmaps%2F${planted.configMap}`,
    `%2e%2e`,
    `${B_DEFAULT}%2F${planted.configMap}`,
    `${planted.configMap}%00`,
    'x'.repeat(400),
    `${planted.configMap}.`,
  ]) {
    bases.push({ path: `/api/v1/namespaces/default/configmaps/${name}` });
  }
  bases.push(
    { path: '/api/v1/namespaces//configmaps' },
    { path: `/api//v1/namespaces/${B_DEFAULT}/configmaps` },
    { path: `/api/v1/namespaces/${B_DEFAULT}//configmaps` },
    { path: `/api/v1/namespaces/default/../../namespaces/${B_DEFAULT}/configmaps` },
    { path: `/api/v1/namespaces/default/%2e%2e/%2e%2e/namespaces/${B_DEFAULT}/secrets` },
    { path: `/apis/${B}-${GROUP}/v1/vaults` },
    { path: `/apis/${GROUP}/v1/vaults` },
  );
  return bases;
}

const LIST_PATHS = [
  '/api/v1/configmaps',
  '/api/v1/secrets',
  '/api/v1/serviceaccounts',
  '/api/v1/events',
  '/apis/events.k8s.io/v1/events',
  '/api/v1/namespaces',
  '/api/v1/namespaces/default/configmaps',
  `/apis/${RBAC}/v1/clusterroles`,
  `/apis/${RBAC}/v1/rolebindings`,
  '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
  '/apis/apiregistration.k8s.io/v1/apiservices',
];

function selectors(): Base[] {
  const labels = [
    `kubezoo.io/tenant=${B}`,
    `kubezoo.io/tenant==${B}`,
    `kubezoo.io/tenant!=${A}`,
    `kubezoo.io/tenant notin (${A})`,
    `kubezoo.io/tenant in (${A},${B})`,
    'kubezoo.io/tenant',
    '!kubezoo.io/tenant',
    `kubezoo.io/tenant=${A},kubezoo.io/tenant=${B}`,
    `kubezoo.io/tenant=${A}\0`,
    `kubezoo.io/tenant=${A}\0,kubezoo.io/tenant=${B}`,
    '\0',
    ',',
    ',,kubezoo.io/tenant!=x',
    `kubernetes.io/metadata.name=${B_DEFAULT}`,
    `kubernetes.io/metadata.name in (${B_DEFAULT},kube-system)`,
    `canary.example.com/tag=${planted.labelValue}`,
  ];
  const fields = [
    `metadata.namespace=${B_DEFAULT}`,
    'metadata.namespace!=x',
    `metadata.namespace!=${A}-default`,
    `metadata.namespace==${B_DEFAULT}`,
    `metadata.namespace=${A}-${B_DEFAULT}`,
    'metadata.namespace=kube-system',
    `metadata.namespace=${B_DEFAULT},metadata.name!=x`,
    `metadata.name=${planted.configMap}`,
    `involvedObject.namespace=${B_DEFAULT}`,
    'metadata.namespace=',
    `metadata.namespace=default\0${B_DEFAULT}`,
    `metadata.namespace=default,metadata.namespace=${B_DEFAULT}`,
  ];
  return LIST_PATHS.flatMap((path) => [
    ...labels.map((labelSelector) => ({ path: path + q({ labelSelector }) })),
    ...fields.map((fieldSelector) => ({ path: path + q({ fieldSelector }) })),
  ]);
}

/** CVE-2023-46254: a cache keyed without the whole identity let one tenant list another's namespaces. */
const CACHED_LISTS = [
  '/api/v1/namespaces',
  '/api/v1/namespaces?resourceVersion=0',
  `/api/v1/namespaces?labelSelector=${enc(`kubezoo.io/tenant=${B}`)}`,
  '/api/v1/configmaps?resourceVersion=0',
  '/api/v1/configmaps?resourceVersion=0&resourceVersionMatch=NotOlderThan',
  '/api/v1/secrets?resourceVersion=0',
  `/apis/${RBAC}/v1/clusterroles?resourceVersion=0`,
  '/apis/apiextensions.k8s.io/v1/customresourcedefinitions?resourceVersion=0',
  '/apis/apiregistration.k8s.io/v1/apiservices?resourceVersion=0',
  '/apis',
  '/api/v1/namespaces?limit=1',
];

function continueTokens(): string[] {
  const forged = (token: object) => Buffer.from(JSON.stringify(token)).toString('base64url');
  const upstreamFormat = (start: string) => Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: Number(bravoResourceVersion), start })).toString('base64');
  return [
    forged({ t: B, n: B_DEFAULT, c: '', rv: '' }),
    forged({ t: B, n: `${B}-${planted.namespace}`, c: upstreamContinueTokens[0] ?? '', rv: '' }),
    forged({ t: A, n: B_DEFAULT, c: '', rv: '' }),
    forged({ t: A, n: `${A}-${B_DEFAULT}`, c: '', rv: '' }),
    forged({ t: A, n: 'kube-system', c: '', rv: '' }),
    forged({ t: A, n: `${A}-default`, c: upstreamContinueTokens[0] ?? '', rv: '' }),
    forged({ t: A, n: `${A}-default`, c: upstreamContinueTokens[2] ?? '', rv: bravoResourceVersion }),
    upstreamFormat(`${B_DEFAULT}/`),
    upstreamFormat(`/${B_DEFAULT}/`),
    upstreamFormat('kube-system/'),
    upstreamFormat(`/registry/configmaps/${B_DEFAULT}/`),
    randomBytes(24).toString('base64'),
    '%00',
    ...upstreamContinueTokens,
  ];
}

function continues(): Base[] {
  const paths = [
    '/api/v1/configmaps',
    '/api/v1/namespaces/default/configmaps',
    '/api/v1/secrets',
    '/api/v1/serviceaccounts',
    '/api/v1/events',
    '/api/v1/namespaces',
    `/apis/${RBAC}/v1/clusterroles`,
  ];
  return paths.flatMap((path) => continueTokens().flatMap((token) => ['1', '500'].map((limit) => ({ path: `${path}?limit=${limit}&continue=${enc(token)}` }))));
}

function watches(): Base[] {
  const paths = [
    '/api/v1/configmaps',
    '/api/v1/namespaces/default/configmaps',
    `/api/v1/namespaces/${B_DEFAULT}/configmaps`,
    '/api/v1/secrets',
    '/api/v1/serviceaccounts',
    '/api/v1/events',
    '/apis/events.k8s.io/v1/events',
    '/api/v1/namespaces',
    `/apis/${RBAC}/v1/clusterroles`,
    `/apis/${B}-${GROUP}/v1/vaults`,
    '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
    '/apis/apiregistration.k8s.io/v1/apiservices',
  ];
  const from = [
    'resourceVersion=1',
    'resourceVersion=0',
    `resourceVersion=${bravoResourceVersion}`,
    'sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true',
    `resourceVersion=0&labelSelector=${enc(`kubezoo.io/tenant=${B}`)}`,
    `resourceVersion=0&fieldSelector=${enc(`metadata.namespace=${B_DEFAULT}`)}`,
  ];
  return paths.flatMap((path) => from.map((query) => ({ path: `${path}?watch=1&${query}`, streamMs: WATCH_READ_MS })));
}

/** Where identity tricks aim: lists across the cluster, B's objects, the upstream's kube-system. */
const IDENTITY_TARGETS = [
  '/api/v1/configmaps',
  '/api/v1/secrets',
  `/api/v1/namespaces/${B_DEFAULT}/secrets/${planted.secret}`,
  `/api/v1/namespaces/${B_DEFAULT}/configmaps`,
  '/api/v1/namespaces/kube-system/secrets',
  '/api/v1/namespaces',
  `/apis/${RBAC}/v1/clusterroles`,
  `/apis/${B}-${GROUP}/v1/vaults`,
];
const onIdentityTargets = (headerSets: Record<string, string>[]): Base[] =>
  headerSets.flatMap((headers) => IDENTITY_TARGETS.map((path) => ({ path, headers })));

function impersonations(): Base[] {
  return onIdentityTargets([
    { 'impersonate-user': `${B}-admin` },
    { 'impersonate-user': 'system:admin' },
    { 'impersonate-user': 'system:kube-controller-manager' },
    { 'impersonate-group': 'system:masters' },
    { 'impersonate-user': `${B}-admin`, 'impersonate-group': `${B}:system:masters` },
    { 'impersonate-user': 'x', 'impersonate-group': 'system:masters' },
    { 'impersonate-uid': 'x', 'impersonate-user': `${B}-admin` },
    { 'impersonate-extra-tenant': B },
    { 'impersonate-user': `${B}-admin`, 'impersonate-extra-tenant': B },
    { 'impersonate-user': `system:serviceaccount:${B_DEFAULT}:default` },
    { 'impersonate-user': 'system:node:x', 'impersonate-group': 'system:nodes' },
    { 'impersonate-extra-scopes': 'x', 'impersonate-user': 'system:admin' },
  ]);
}

/** capsule-proxy #188: `Connection: Impersonate-User` made the proxy drop its own impersonation header. */
function connectionDrops(): Base[] {
  const connections = [
    'Impersonate-User',
    'Impersonate-User, Impersonate-Group',
    'Impersonate-Extra-Tenant',
    'close, Impersonate-User',
    'keep-alive, Impersonate-Group, Impersonate-Extra-Tenant',
    'Authorization',
    'X-Remote-User',
    'Impersonate-Uid, Impersonate-User, Impersonate-Group, Impersonate-Extra-Tenant',
  ];
  return connections.flatMap((connection) => [
    ...onIdentityTargets([{ connection }]),
    ...onIdentityTargets([{ connection, 'impersonate-user': `${B}-admin`, 'impersonate-group': 'system:masters' }]),
  ]);
}

/** kcp GHSA-c8w2-fgvx-vhv4: the front proxy passed the client's `X-Remote-*` headers through. */
function remoteHeaders(): Base[] {
  return onIdentityTargets([
    { 'x-remote-user': 'system:admin' },
    { 'x-remote-group': 'system:masters' },
    { 'x-remote-user': `${B}-admin`, 'x-remote-group': `${B}:system:masters` },
    { 'x-remote-extra-tenant': B },
    { 'x-remote-user': 'admin', 'x-remote-group': 'system:masters', 'x-remote-extra-tenant': '' },
    { 'x-remote-uid': 'x', 'x-remote-user': `${B}-admin` },
    { 'x-forwarded-user': 'system:admin', 'x-forwarded-groups': 'system:masters' },
  ]);
}

/** CVE-2023-48312: capsule-proxy accepted an empty bearer token. */
function emptyBearers(): Base[] {
  return onIdentityTargets([
    { authorization: 'Bearer ' },
    { authorization: 'Bearer' },
    { authorization: 'bearer ' },
    { authorization: 'Basic ' },
    { authorization: `Basic ${Buffer.from('admin:admin').toString('base64')}` },
    { authorization: 'Bearer x' },
    { authorization: 'Bearer ' + 'A'.repeat(2000) },
  ]);
}

function upgrades(): Base[] {
  const paths = [
    '/api/v1/configmaps',
    '/api/v1/secrets',
    '/api/v1/serviceaccounts',
    '/api/v1/events',
    '/apis/events.k8s.io/v1/events',
    `/api/v1/namespaces/${B_DEFAULT}/configmaps`,
    '/api/v1/namespaces/kube-system/configmaps',
    `/apis/${RBAC}/v1/clusterroles`,
    `/apis/${B}-${GROUP}/v1/vaults`,
    '/api/v1/configmaps?watch=1',
    '/api/v1/secrets?watch=1&resourceVersion=0',
    '/api/v1/namespaces?watch=1',
  ];
  const upgradeHeaders: Record<string, string>[] = [
    { upgrade: 'websocket', 'sec-websocket-key': randomBytes(16).toString('base64'), 'sec-websocket-version': '13' },
    {
      upgrade: 'websocket',
      'sec-websocket-key': randomBytes(16).toString('base64'),
      'sec-websocket-version': '13',
      'sec-websocket-protocol': 'base64.binary.k8s.io',
    },
    { upgrade: 'SPDY/3.1', 'x-stream-protocol-version': 'v4.channel.k8s.io' },
    { upgrade: 'foo' },
    { upgrade: 'h2c', 'http2-settings': 'AAMAAABkAARAAAAAAAIAAAAA' },
  ];
  const connections = ['Upgrade', 'upgrade', 'keep-alive, Upgrade'];
  return paths.flatMap((path) =>
    upgradeHeaders.flatMap((headers) =>
      connections.map((connection) => ({ path, headers: { connection, ...headers }, streamMs: path.includes('watch=1') ? WATCH_READ_MS : undefined })),
    ),
  );
}

function nonResourcePaths(): Base[] {
  const groupB = `${B}-${GROUP}`;
  return [
    `/openapi/v3/apis/${groupB}/v1%3F/x`,
    `/openapi/v3/apis/${groupB}/v1%3f`,
    `/openapi/v3/apis/${groupB}/v1%3Fhash=x`,
    `/openapi/v3/apis/${groupB}/v1%23`,
    `/openapi/v3/apis/${groupB}/v1%00`,
    `/openapi/v3/apis/${groupB}/v1%0A`,
    `/openapi/v3/apis/${groupB}/v1%0D`,
    `/openapi/v3/apis/${groupB}/v1%7F`,
    `/openapi/v3/apis/${groupB}/v1`,
    `/openapi/v3/apis/${groupB}%2Fv1`,
    `/openapi/v3/apis/${GROUP}/v1`,
    `/openapi/v3/apis/${B}%2D${GROUP}/v1`,
    '/openapi/v3',
    '/openapi/v3?x',
    '/openapi/v3%3F',
    '/openapi/v2',
    '/openapi/v2?x',
    '/openapi/v2%3Fx',
    `/apis/${groupB}`,
    `/apis/${groupB}/v1`,
    `/apis/${groupB}%3F`,
    `/apis/${groupB}/v1%3F`,
    '/apis',
    '/api',
    '/api/v1%2F..',
    `/api/v1%2F..%2F..%2Fapis%2F${groupB}%2Fv1`,
    `/apis/${GROUP}/v1`,
    '/version%3F',
  ].map((path) => ({ path }));
}

function reviews(): Base[] {
  const post = (path: string, body: object): Base => ({ method: 'POST', path, body });
  const sar = (spec: object) =>
    post('/apis/authorization.k8s.io/v1/subjectaccessreviews', { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec });
  const tokenReview = (spec: object) =>
    post('/apis/authentication.k8s.io/v1/tokenreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec });
  const ssar = (spec: object) =>
    post('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec });
  const ssrr = (namespace: string) =>
    post('/apis/authorization.k8s.io/v1/selfsubjectrulesreviews', {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectRulesReview',
      spec: { namespace },
    });
  const onBound = { verb: 'get', resource: 'configmaps', name: planted.roleResourceName };
  return [
    tokenReview({ token: bravoToken }),
    tokenReview({ token: bravoToken, audiences: ['https://kubernetes.default.svc.cluster.local'] }),
    tokenReview({ token: '' }),
    sar({ user: `${B}-admin`, resourceAttributes: { verb: 'get', resource: 'secrets', namespace: B_DEFAULT } }),
    sar({ user: `${B}-admin`, groups: [`${B}:system:masters`], resourceAttributes: { verb: 'list', resource: 'configmaps', namespace: B_DEFAULT } }),
    sar({ user: 'system:admin', groups: ['system:masters'], resourceAttributes: { verb: 'get', resource: 'secrets', namespace: 'kube-system' } }),
    sar({ user: `system:serviceaccount:${B_DEFAULT}:default`, resourceAttributes: { verb: 'get', resource: 'configmaps', namespace: B_DEFAULT } }),
    // B's RoleBinding grants this upstream; a forwarded answer would name the binding and the role
    sar({ user: `${B}-${planted.boundUser}`, resourceAttributes: { ...onBound, namespace: B_DEFAULT } }),
    sar({ user: `${B}-${planted.boundUser}`, groups: ['system:authenticated'], resourceAttributes: { ...onBound, namespace: `${B}-${planted.namespace}` } }),
    sar({ user: `${B}-admin`, nonResourceAttributes: { verb: 'get', path: `/openapi/v3/apis/${B}-${GROUP}/v1` } }),
    post(`/apis/authorization.k8s.io/v1/namespaces/${B_DEFAULT}/localsubjectaccessreviews`, {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'LocalSubjectAccessReview',
      metadata: { namespace: B_DEFAULT },
      spec: { user: `${B}-${planted.boundUser}`, resourceAttributes: { ...onBound, namespace: B_DEFAULT } },
    }),
    post('/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'LocalSubjectAccessReview',
      metadata: { namespace: 'default' },
      spec: { user: `${B}-${planted.boundUser}`, resourceAttributes: { ...onBound, namespace: 'default' } },
    }),
    ssar({ resourceAttributes: { verb: 'get', resource: 'secrets', namespace: B_DEFAULT } }),
    ssar({ resourceAttributes: { verb: 'get', resource: 'secrets', namespace: 'kube-system', name: planted.upstreamSecret } }),
    ssar({ resourceAttributes: { verb: 'get', resource: 'vaults', group: `${B}-${GROUP}`, namespace: B_DEFAULT } }),
    ssrr(B_DEFAULT),
    ssrr(`${B}-${planted.namespace}`),
    ssrr('kube-system'),
    ssrr(`${A}-${B_DEFAULT}`),
  ];
}

function proxies(): Base[] {
  const bases: Base[] = [];
  const subpaths = [
    'services/x/proxy',
    'services/x/proxy/',
    'services/https:x:443/proxy/api',
    'services/kube-dns:53/proxy',
    'pods/x/proxy',
    'pods/x:80/proxy/y',
    'pods/x/exec?command=ls&stdout=true',
    'pods/x/attach?stdout=true',
    'pods/x/portforward?ports=80',
    'pods/x/log',
  ];
  for (const ns of [B_DEFAULT, `${B}-${planted.namespace}`, 'kube-system', `${A}-${B_DEFAULT}`]) {
    for (const sub of subpaths) bases.push({ path: `/api/v1/namespaces/${ns}/${sub}` }, { method: 'POST', path: `/api/v1/namespaces/${ns}/${sub}` });
    for (const sub of ['pods/x/exec?command=ls&stdout=true', 'pods/x/attach?stdout=true', 'pods/x/portforward?ports=80']) {
      bases.push(
        {
          method: 'POST',
          path: `/api/v1/namespaces/${ns}/${sub}`,
          headers: { connection: 'Upgrade', upgrade: 'SPDY/3.1', 'x-stream-protocol-version': 'v4.channel.k8s.io' },
        },
        {
          path: `/api/v1/namespaces/${ns}/${sub}`,
          headers: {
            connection: 'Upgrade',
            upgrade: 'websocket',
            'sec-websocket-key': randomBytes(16).toString('base64'),
            'sec-websocket-version': '13',
            'sec-websocket-protocol': 'v5.channel.k8s.io',
          },
        },
      );
    }
  }
  for (const path of [
    '/api/v1/nodes/x/proxy',
    '/api/v1/nodes/x/proxy/configz',
    '/api/v1/nodes/127.0.0.1:10250/proxy/pods',
    '/api/v1/nodes/x:10250/proxy/runningpods/',
  ])
    bases.push({ path });
  return bases;
}

function writes(): Base[] {
  const bases: Base[] = [];
  const cm = (namespace: string | undefined, name: string, extra: object = {}) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, ...(namespace === undefined ? {} : { namespace }), ...extra },
    data: { key: 'pwned' },
  });
  const inB = `/api/v1/namespaces/${B_DEFAULT}/configmaps`;
  const own = '/api/v1/namespaces/default/configmaps/own';
  const merge = 'application/merge-patch+json';
  const jsonPatch = 'application/json-patch+json';
  const strategic = 'application/strategic-merge-patch+json';
  const subjectsOfB = [
    [{ apiGroup: RBAC, kind: 'User', name: `${B}-admin` }],
    [{ apiGroup: RBAC, kind: 'Group', name: `${B}:system:masters` }],
    [{ apiGroup: RBAC, kind: 'Group', name: 'system:masters' }],
    [{ kind: 'ServiceAccount', name: planted.serviceAccount, namespace: B_DEFAULT }],
    [{ kind: 'ServiceAccount', name: 'default', namespace: 'kube-system' }],
    [{ apiGroup: RBAC, kind: 'User', name: `system:serviceaccount:${B_DEFAULT}:default` }],
    [{ apiGroup: RBAC, kind: 'Group', name: `system:serviceaccounts:${B_DEFAULT}` }],
  ];
  const roleRefs = [`${B}-${planted.clusterRole}`, 'cluster-admin', planted.clusterRole];
  bases.push(
    { method: 'POST', path: '/api/v1/namespaces/default/configmaps', body: cm(B_DEFAULT, 'moved') },
    { method: 'POST', path: inB, body: cm(B_DEFAULT, 'planted') },
    { method: 'POST', path: inB, body: cm(undefined, 'planted2') },
    { method: 'POST', path: '/api/v1/namespaces/kube-system/configmaps', body: cm('kube-system', 'planted3') },
    { method: 'PUT', path: `${inB}/${planted.configMap}`, body: cm(B_DEFAULT, planted.configMap) },
    { method: 'PUT', path: own, body: cm(B_DEFAULT, 'own') },
    { method: 'PATCH', path: own, contentType: merge, body: { metadata: { namespace: B_DEFAULT } } },
    { method: 'PATCH', path: own, contentType: jsonPatch, body: [{ op: 'replace', path: '/metadata/namespace', value: B_DEFAULT }] },
    { method: 'PATCH', path: own, contentType: jsonPatch, body: [{ op: 'add', path: '/metadata/labels', value: { 'kubezoo.io/tenant': B } }] },
    { method: 'PATCH', path: own, contentType: jsonPatch, body: [{ op: 'copy', from: '/metadata/name', path: '/metadata/namespace' }] },
    { method: 'PATCH', path: own, contentType: strategic, body: { $patch: 'replace', metadata: { name: 'own', namespace: B_DEFAULT } } },
    {
      method: 'PATCH',
      path: own,
      contentType: merge,
      body: { metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: planted.configMap, uid: uidOfBravoConfigMap }] } },
    },
    { method: 'PATCH', path: `${inB}/${planted.configMap}`, contentType: merge, body: { data: { key: 'pwned' } } },
    { method: 'PATCH', path: `${inB}/${planted.configMap}`, contentType: jsonPatch, body: [{ op: 'replace', path: '/data/key', value: 'pwned' }] },
    {
      method: 'PATCH',
      path: `${inB}/${planted.configMap}?fieldManager=x&force=true`,
      contentType: 'application/apply-patch+yaml',
      body: cm(B_DEFAULT, planted.configMap),
    },
    { method: 'PATCH', path: `/apis/${RBAC}/v1/clusterroles/${B}-${planted.clusterRole}`, contentType: merge, body: { metadata: { labels: { x: 'pwned' } } } },
    { method: 'DELETE', path: `${inB}/${planted.configMap}` },
    { method: 'DELETE', path: inB },
    { method: 'DELETE', path: `/api/v1/namespaces/${B}-${planted.namespace}` },
    { method: 'DELETE', path: `/apis/${RBAC}/v1/clusterroles/${B}-${planted.clusterRole}` },
    { method: 'DELETE', path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/vaults.${B}-${GROUP}` },
    { method: 'DELETE', path: `/api/v1/namespaces/kube-system/configmaps/${planted.upstreamConfigMap}` },
    { method: 'POST', path: '/api/v1/namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: B_DEFAULT } } },
    {
      method: 'POST',
      path: `/apis/${RBAC}/v1/clusterroles`,
      body: { apiVersion: `${RBAC}/v1`, kind: 'ClusterRole', metadata: { name: `${B}-${planted.clusterRole}` }, rules: [] },
    },
    {
      method: 'POST',
      path: `/api/v1/namespaces/${B_DEFAULT}/serviceaccounts/${planted.serviceAccount}/token`,
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} },
    },
    {
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      body: cm('default', 'adopted', { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: planted.configMap, uid: uidOfBravoConfigMap }] }),
    },
    // protobuf bodies: what typed clients send
    {
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      contentType: ACCEPT.protobuf.split(',')[0],
      body: protobufConfigMap({ name: 'moved-pb', namespace: B_DEFAULT }, { key: 'pwned' }),
    },
    {
      method: 'POST',
      path: inB,
      contentType: ACCEPT.protobuf.split(',')[0],
      body: protobufConfigMap({ name: 'planted-pb', namespace: B_DEFAULT }, { key: 'pwned' }),
    },
    {
      method: 'PUT',
      path: `${inB}/${planted.configMap}`,
      contentType: ACCEPT.protobuf.split(',')[0],
      body: protobufConfigMap({ name: planted.configMap, namespace: B_DEFAULT }, { key: 'pwned' }),
    },
    {
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      contentType: ACCEPT.protobuf.split(',')[0],
      body: protobufConfigMap(
        {
          name: 'adopted-pb',
          namespace: 'default',
          ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: planted.configMap, uid: uidOfBravoConfigMap }],
        },
        {},
      ),
    },
  );
  subjectsOfB.forEach((subjects, i) => {
    for (const [j, roleName] of roleRefs.entries()) {
      const name = `bind-${i}-${j}`;
      const roleRef = { apiGroup: RBAC, kind: 'ClusterRole', name: roleName };
      bases.push(
        {
          method: 'POST',
          path: `/apis/${RBAC}/v1/namespaces/default/rolebindings`,
          body: { apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: { name }, subjects, roleRef },
        },
        {
          method: 'POST',
          path: `/apis/${RBAC}/v1/clusterrolebindings`,
          body: { apiVersion: `${RBAC}/v1`, kind: 'ClusterRoleBinding', metadata: { name }, subjects, roleRef },
        },
        {
          method: 'POST',
          path: `/apis/${RBAC}/v1/namespaces/${B_DEFAULT}/rolebindings`,
          body: { apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: { name, namespace: B_DEFAULT }, subjects, roleRef },
        },
      );
    }
    const protoSubjects = subjects.map((s) => ({ kind: s.kind, name: s.name, namespace: (s as { namespace?: string }).namespace }));
    bases.push(
      {
        method: 'POST',
        path: `/apis/${RBAC}/v1/clusterrolebindings`,
        contentType: ACCEPT.protobuf.split(',')[0],
        body: protobufBinding('ClusterRoleBinding', { name: `bind-pb-${i}` }, protoSubjects, { kind: 'ClusterRole', name: `${B}-${planted.clusterRole}` }),
      },
      {
        method: 'POST',
        path: `/apis/${RBAC}/v1/namespaces/default/rolebindings`,
        contentType: ACCEPT.protobuf.split(',')[0],
        body: protobufBinding('RoleBinding', { name: `bind-pb-${i}` }, protoSubjects, { kind: 'ClusterRole', name: 'cluster-admin' }),
      },
    );
  });
  // each write also as a dry run, which some proxies route differently
  return [...bases, ...bases.map((base) => ({ ...base, path: base.path + (base.path.includes('?') ? '&' : '?') + 'dryRun=All' }))];
}

/** Reads first: the writes put B's names into A's own objects, which A may then read back. */
function readAttacks(): AttackRequest[] {
  return [
    ...expand('crafted names and namespaces', craftedNames()),
    ...expand('label and field selectors', selectors()),
    ...expand(
      'cross-tenant list through selectors (CVE-2023-46254)',
      [...CACHED_LISTS, ...CACHED_LISTS].map((path) => ({ path })),
    ),
    ...expand('forged and foreign continue tokens', continues()),
    ...expand('watches from old resourceVersions', watches()),
    ...expand('impersonation headers', impersonations()),
    ...expand('capsule-proxy Connection: Impersonate-User (#188)', connectionDrops()),
    ...expand('kcp X-Remote-* pass-through (GHSA-c8w2-fgvx-vhv4)', remoteHeaders()),
    ...expand('empty bearer token (CVE-2023-48312)', emptyBearers(), { credentials: ['none', 'cert'] }),
    ...expand('Connection: Upgrade on ordinary requests', upgrades()),
    ...expand('encoded characters in non-resource paths', nonResourcePaths()),
    ...expand('reviews', reviews()),
    ...expand('proxy, exec, attach and portforward', proxies()),
    ...expand('media types: YAML, CBOR, unknown Accept parameters', [...craftedNames(), ...CACHED_LISTS.map((path) => ({ path }))], {
      accepts: ['yaml', 'cbor', 'cborFirst', 'unknownParameters'],
    }),
  ];
}

/** A fixed shuffle, so long watches spread over the run and every run sends the same order. */
function shuffled<T>(items: T[]): T[] {
  let seed = 0x13;
  const random = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

function describe(request: AttackRequest): string {
  const headers = Object.entries(request.headers)
    .filter(([name]) => name !== 'accept-encoding')
    .map(([name, value]) => `${name}: ${value.length > 80 ? value.slice(0, 80) + '…' : value}`)
    .join('; ');
  return `${request.protocol}/${request.credential} ${request.method} ${request.path} [${headers}]`;
}

interface ClassTally {
  sent: number;
  statuses: Map<string, number>;
  leaks: { request: AttackRequest; status: number; hits: Hit[] }[];
  /** one request per outcome worth a look (5xx, no answer) */
  oddities: Map<string, AttackRequest>;
}

t.test("tenant A's attacks reveal nothing of tenant B's or the upstream's objects", async (t) => {
  const oracle = new Oracle(canaries);

  // the oracle can see: B reading its own objects receives the canaries
  const bravoSession = connectH2(credentialsOf(bravo.kubeconfig));
  const own = await h2Request(bravoSession, 'GET', `/api/v1/namespaces/default/configmaps/${planted.configMap}`);
  t.ok(
    oracle.scan(Buffer.from(own.body), 'body', '').some((hit) => hit.canary.value === planted.configMapValue),
    'B receives its own canary value: the oracle would see a leak',
  );
  // CVE-2023-46254's shape: B's lists are answered (and cached, if anything caches) just before A asks the same
  for (const path of CACHED_LISTS) await h2Request(bravoSession, 'GET', path);
  bravoSession.close();

  const client = new AttackClient(credentialsOf(alfa.kubeconfig), attackerToken);
  const asAttacker = () =>
    client.send(
      { attackClass: 'probe', protocol: 'h2', credential: 'token', method: 'GET', path: '/api/v1/namespaces/default/configmaps/own', headers: {} },
      0,
    );
  let probe = await asAttacker();
  for (let i = 0; probe.status !== 200 && i < 50; i++) {
    await new Promise((resolve) => setTimeout(resolve, 200)); // the upstream's RBAC cache takes a moment
    probe = await asAttacker();
  }
  t.equal(
    probe.status,
    200,
    `A's service-account token works: the token attacks are made by an admin of A's namespaces (${probe.body.toString().slice(0, 200)})`,
  );
  const pb = await client.send(
    {
      attackClass: 'probe',
      protocol: 'h2',
      credential: 'cert',
      method: 'POST',
      path: '/api/v1/namespaces/default/configmaps',
      headers: { 'content-type': 'application/vnd.kubernetes.protobuf', accept: 'application/json' },
      body: protobufConfigMap({ name: 'from-protobuf' }, { a: 'b' }),
    },
    0,
  );
  t.equal(pb.status, 201, `A's own protobuf ConfigMap is created: the suite's protobuf bodies are well formed (${pb.body.toString().slice(0, 200)})`);

  const tallies = new Map<string, ClassTally>();
  let errors = 0;
  const anonymousAnswers: string[] = [];
  const run = async (requests: AttackRequest[], published: string) => {
    await runBounded(client, shuffled(requests), CONCURRENCY, (request, received) => {
      let tally = tallies.get(request.attackClass);
      if (tally === undefined) tallies.set(request.attackClass, (tally = { sent: 0, statuses: new Map(), leaks: [], oddities: new Map() }));
      tally.sent++;
      // 0: a stream we closed before any answer head came (a watch or an upgrade)
      const outcome = received.error !== undefined && received.status === 0 ? 'error' : String(received.status);
      if (outcome === 'error') errors++;
      tally.statuses.set(outcome, (tally.statuses.get(outcome) ?? 0) + 1);
      if ((outcome === 'error' || outcome === '0' || outcome.startsWith('5')) && !tally.oddities.has(outcome)) tally.oddities.set(outcome, request);
      // (A request that got no answer at all is counted among the errors below, not as an answer.)
      if (request.credential === 'none' && outcome !== 'error' && received.status !== 401) anonymousAnswers.push(`${describe(request)} → ${received.status}`);
      const hits = findLeaks(oracle, request, received, published);
      if (hits.length > 0) tally.leaks.push({ request, status: received.status, hits });
    });
  };
  const started = performance.now();
  const reads = readAttacks();
  await run(reads, '');
  // B's names A wrote into its own objects are A's to read back: during the writes only values and uids are canaries
  const writeRequests = expand("writes that move objects or bind B's subjects", writes());
  await run(writeRequests, writeRequests.map(sentText).join('\n'));
  const seconds = (performance.now() - started) / 1000;
  client.close();
  const requests = [...reads, ...writeRequests];
  const byTransport = new Map<string, number>();
  for (const r of requests) {
    const key = `${r.protocol}/${r.credential}/${Object.entries(ACCEPT).find(([, accept]) => accept === r.headers.accept)?.[0] ?? 'other'}`;
    byTransport.set(key, (byTransport.get(key) ?? 0) + 1);
  }

  t.comment(`${requests.length} attack requests in ${seconds.toFixed(1)} s (${Math.round(requests.length / seconds)}/s, ${CONCURRENCY} in flight)`);
  t.comment(
    `by protocol/credential/answer asked: ${[...byTransport]
      .sort()
      .map(([key, n]) => `${key}×${n}`)
      .join(' ')}`,
  );
  for (const [name, tally] of tallies) {
    const statuses = [...tally.statuses]
      .sort()
      .map(([status, n]) => `${status}×${n}`)
      .join(' ');
    t.comment(`${name}: ${tally.sent} requests, ${tally.leaks.length} leaking; answers ${statuses}`);
    for (const [outcome, request] of tally.oddities) t.comment(`  ${outcome} e.g. ${describe(request)}`);
  }
  t.same(anonymousAnswers.slice(0, 5), [], 'without a credential (an empty bearer token, CVE-2023-48312) every answer is 401');
  t.ok(requests.length >= 10_000, `at least 10,000 attack requests (${requests.length})`);
  t.ok(errors < requests.length * 0.05, `almost every request got an answer (${errors} without)`);

  for (const [name, tally] of tallies) {
    for (const leak of tally.leaks.slice(0, LEAKS_SHOWN_PER_CLASS)) {
      const first = leak.hits.slice(0, 3).map((hit) => `${hit.canary.what} in ${hit.where}: …${hit.context}…`);
      t.comment(`LEAK [${name}] ${describe(leak.request)} → ${leak.status}; ${leak.hits.length} canaries, e.g. ${first.join(' | ')}`);
    }
    t.equal(tally.leaks.length, 0, `${name}: no canary of B or the upstream in any of ${tally.sent} answers`);
  }
});

t.test("after the attack, read straight from the upstream: B's objects are unchanged and everything new is A's", async (t) => {
  for (const [path, was] of before) {
    const now = await upstreamJson(upstream, 'GET', path);
    t.equal(now.status, 200, `${path} still exists`);
    if (now.status !== 200) continue;
    t.equal(now.body.metadata.resourceVersion, was.metadata.resourceVersion, `${path} unchanged (resourceVersion)`);
    const content = (o: any) => JSON.stringify([o.data, o.spec, o.rules, o.subjects, o.metadata.labels, o.metadata.annotations, o.metadata.ownerReferences]);
    t.equal(content(now.body), content(was), `${path} unchanged (content)`);
  }
  const after = await upstreamObjects();
  const created = [...after.values()].filter((object) => !objectsBefore.has(object.metadata.uid));
  const notA: string[] = [];
  const bindsOthers: string[] = [];
  for (const object of created) {
    const { name, namespace } = object.metadata;
    const where = `${object.collection} ${namespace === undefined ? '' : namespace + '/'}${name}`;
    const isCrd = object.collection.includes('customresourcedefinitions');
    const owned = namespace !== undefined ? namespace.startsWith(`${A}-`) : isCrd ? String(object.spec?.group).startsWith(`${A}-`) : name.startsWith(`${A}-`);
    if (!owned) notA.push(where);
    for (const subject of object.subjects ?? []) {
      // A ClusterRoleBinding's subjects are A's shadow identities upstream (CLUSTER_SUBJECT_PREFIX + A's upstream form).
      const subjectName =
        object.collection.includes('clusterrolebindings') && typeof subject.name === 'string' && subject.name.startsWith(CLUSTER_SUBJECT_PREFIX)
          ? subject.name.slice(CLUSTER_SUBJECT_PREFIX.length)
          : subject.name;
      const mine =
        subject.kind === 'Group'
          ? subjectName.startsWith(`${A}:`) || subjectName.startsWith(`system:serviceaccounts:${A}-`)
          : subject.kind === 'ServiceAccount'
            ? subject.namespace?.startsWith(`${A}-`)
            : subjectName.startsWith(`${A}-`) || subjectName.startsWith(`system:serviceaccount:${A}-`);
      if (!mine) bindsOthers.push(`${where}: ${subject.kind} ${subject.namespace ?? ''}/${subject.name}`);
    }
    if (object.roleRef?.name?.startsWith(`${B}-`)) bindsOthers.push(`${where}: roleRef ${object.roleRef.name}`);
  }
  t.comment(`${created.length} objects created upstream during the attack`);
  t.same(notA, [], "every object the attack created upstream carries A's prefix");
  t.same(bindsOthers, [], 'no binding the attack created names a subject or role outside A');
});
