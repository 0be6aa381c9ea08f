// The Helm chart (charts/tenantgate) as a cluster admin meets it: it lints, renders what its values say, every object
// it renders is accepted by a real kube-apiserver, and tenantgate serves tenants with nothing but the chart's RBAC.
// Its own rig (not a shared one): it installs the chart's cluster-wide objects and runs tenantgate under only them.
import { createPrivateKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';
import t from 'tap';
import { parseAllDocuments, stringify } from 'yaml';
import { createCertificateAuthority, issueCertificate } from '../../lib/auth/pki.ts';
import { DEV_ADMIN, writeClientKubeconfig, writeGatewayFiles } from '../../lib/dev.ts';
import { RIG_VERSIONS } from '../../lib/rig/build.ts';
import { startRig, type Rig } from '../../lib/rig/harness.ts';
import { ensureHelm, ensureServiceMonitorCrd } from '../../lib/rig/helm.ts';
import { runCommand, type CommandResult } from '../../lib/rig/process.ts';
import { fetchKubeconfig } from '../../lib/tenants/tenant-command.ts';
import { TENANT_API_VERSION, TENANTS_PATH } from '../../lib/tenants/tenant.ts';
import { upstreamJson } from '../../lib/upstream/client.ts';
import { loadKubeconfig, renderKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { exampleCrd } from '../helpers/fixtures.ts';
import { spawnGateway, stopChild } from '../helpers/stack.ts';
import { waitUntilReady, withClient } from '../helpers/tenants.ts';
import { succeeded } from '../helpers/kit.ts';

const CHART = new URL('../../charts/tenantgate', import.meta.url).pathname;
const CLI = new URL('../../dist/lib/cli.js', import.meta.url).pathname;
const RELEASE = 'tg';
const NAMESPACE = 'tenantgate-system';
const FULLNAME = 'tg-tenantgate';

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  // Read as the assertions need: the apiserver, not this test, checks the shapes.
  spec?: any;
  rules?: any[];
  subjects?: any[];
  roleRef?: any;
  data?: Record<string, string>;
}

let rig: Rig;
let helm: string;
let serviceMonitorCrd: string;
let scratch: string;

/** helm with its cache, config and data homes in the test's scratch directory (nothing written to ~/.config). */
function runHelm(args: string[]): Promise<CommandResult> {
  const env = {
    ...process.env,
    HELM_CACHE_HOME: join(scratch, 'helm-cache'),
    HELM_CONFIG_HOME: join(scratch, 'helm-config'),
    HELM_DATA_HOME: join(scratch, 'helm-data'),
  };
  return runCommand(helm, args, { env, timeoutMs: 60_000 });
}

function valuesFile(name: string, values: unknown): string {
  const path = join(scratch, name);
  writeFileSync(path, stringify(values));
  return path;
}

/** helm's stdout; throws with its stderr if it fails (on success its stderr only says that the dashboard is a link). */
async function helmOk(args: string[]): Promise<string> {
  const result = await runHelm(args);
  if (result.code !== 0) throw new Error(`helm ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** Renders the chart as `helm install` would into NAMESPACE, against the rig's Kubernetes version. */
async function render(values: string): Promise<{ yaml: string; objects: K8sObject[] }> {
  const yaml = await helmOk(['template', RELEASE, CHART, '--namespace', NAMESPACE, '--kube-version', RIG_VERSIONS.kubernetes, '-f', values]);
  const objects = parseAllDocuments(yaml)
    .map((document) => document.toJS() as K8sObject | null)
    .filter((object): object is K8sObject => object !== null);
  return { yaml, objects };
}

function only(objects: K8sObject[], kind: string, name?: string): K8sObject {
  const found = objects.filter((object) => object.kind === kind && (name === undefined || object.metadata.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}${name === undefined ? '' : ` ${name}`}, rendered ${found.length}`);
  return found[0]!;
}

function containerOf(objects: K8sObject[]): any {
  return only(objects, 'Deployment').spec.template.spec.containers[0];
}

/** The container's flags as a map: `--flag=value` to its value, a bare `--flag` to 'true' (`serve` left out). */
function argsOf(objects: K8sObject[]): Map<string, string> {
  const args = (containerOf(objects).args as string[]).filter((arg) => arg.startsWith('--'));
  return new Map(args.map((arg) => (arg.includes('=') ? [arg.slice(2, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg.slice(2), 'true'])));
}

/** Whether a rendered role grants `verb` on `resource` of `group` (no resourceNames: the chart's rules name none). */
function grants(roles: K8sObject[], group: string, resource: string, verb: string): boolean {
  return roles.some((role) =>
    (role.rules ?? []).some(
      (rule) =>
        // (A non-resource rule has neither.)
        ((rule.apiGroups ?? []).includes(group) || (rule.apiGroups ?? []).includes('*')) &&
        ((rule.resources ?? []).includes(resource) || (rule.resources ?? []).includes('*')) &&
        (rule.verbs.includes(verb) || rule.verbs.includes('*')),
    ),
  );
}

const kubectlOk = (args: string[], input?: string, kubeconfig?: string) => succeeded(rig.kubectl(args, { input, kubeconfig }), `kubectl ${args.join(' ')}`);

const ca = createCertificateAuthority('chart-test-ca');
const serving = issueCertificate(ca, { commonName: 'tenantgate', dnsNames: [`${FULLNAME}.${NAMESPACE}.svc`], usage: 'server' });
const tenantCa = createCertificateAuthority('chart-test-tenant-ca');

/** What an admin fills in at the least: the etcd cluster and the certificates. */
const DEFAULT_VALUES = {
  etcd: { endpoints: 'http://etcd-0.etcd:2379,http://etcd-1.etcd:2379,http://etcd-2.etcd:2379' },
  tls: { cert: serving.certPem, key: serving.keyPem, ca: ca.certPem },
  tenantCA: { cert: tenantCa.certPem, key: tenantCa.keyPem },
};

const CUSTOM_VALUES = {
  replicaCount: 3,
  image: { repository: 'registry.example.com/tenantgate', tag: '1.2.3' },
  etcd: { endpoints: 'http://10.1.0.5:2379', prefix: '/tg/tenants/' },
  tls: { existingSecret: 'tenantgate-serving' },
  tenantCA: { existingSecret: 'tenantgate-tenant-ca' },
  service: { clusterIP: '10.0.0.50' }, // in the rig's service range, as it must be in the cluster's
  inClusterAddress: '10.0.0.50:443',
  podAntiAffinity: 'required',
  antiAffinityTopologyKey: 'topology.kubernetes.io/zone',
  shutdownDelay: '10s',
  shutdownDrain: '60s',
  terminationGracePeriodSeconds: 90,
  confineUpstreamDiscovery: true,
  extraArgs: ['--max-inflight=800'],
  resources: { requests: { cpu: '2', memory: '2Gi' }, limits: { cpu: '4', memory: '4Gi' } },
  probes: { startup: { enabled: true } },
  metrics: { port: 9100, podAnnotations: false, serviceMonitor: { enabled: true, interval: '15s', labels: { release: 'prometheus' } } },
  extraObjects: [
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: '{{ .Release.Name }}-ingress', namespace: NAMESPACE },
      spec: {
        podSelector: { matchLabels: { 'app.kubernetes.io/instance': '{{ .Release.Name }}' } },
        policyTypes: ['Ingress'],
        ingress: [{ ports: [{ port: 6443 }] }],
      },
    },
  ],
};

t.before(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'tenantgate-helm-'));
  const started = Date.now();
  helm = await ensureHelm({ log: (line) => t.comment(line) });
  serviceMonitorCrd = await ensureServiceMonitorCrd({ log: (line) => t.comment(line) });
  t.comment(`helm ${helm} ready in ${Date.now() - started} ms`);
  // Controllers: a deleted tenant's namespaces finish terminating (the namespace controller), so its deletion ends.
  rig = await startRig({ log: (line) => t.comment(line) });
  await kubectlOk(['create', 'namespace', NAMESPACE]);
});

t.teardown(async () => {
  await rig?.stop();
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

t.test('helm lint --strict passes with no values, the default values and every option turned', async (t) => {
  for (const [name, values] of [
    ['none', {}],
    ['default', DEFAULT_VALUES],
    ['custom', CUSTOM_VALUES],
  ] as const) {
    const lint = await runHelm([
      'lint',
      '--strict',
      CHART,
      '--namespace',
      NAMESPACE,
      '--kube-version',
      RIG_VERSIONS.kubernetes,
      '-f',
      valuesFile(`lint-${name}.yaml`, values),
    ]);
    t.equal(lint.code, 0, `${name}: helm lint --strict passes`, { output: lint.stdout + lint.stderr });
    t.match(lint.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    t.notMatch(lint.stdout, /\[(WARNING|ERROR)\]/, `${name}: no warnings`);
  }
});

t.test('helm package carries the dashboard itself, not the link to it', async (t) => {
  const packaged = await helmOk(['package', CHART, '--destination', scratch]);
  const archive = /saved it to: (\S+)/.exec(packaged)?.[1] ?? '';
  const rendered = await helmOk([
    'template',
    RELEASE,
    archive,
    '--namespace',
    NAMESPACE,
    '-f',
    valuesFile('packaged.yaml', DEFAULT_VALUES),
    '--show-only',
    'templates/grafana-dashboard.yaml',
  ]);
  const dashboard = parseAllDocuments(rendered)[0]!.toJS() as K8sObject;
  t.equal(
    dashboard.data!['tenantgate.json'],
    readFileSync(new URL('../../grafana/tenantgate.json', import.meta.url), 'utf8').trimEnd(),
    'the packaged chart renders grafana/tenantgate.json',
  );
});

t.test('the chart refuses values that cannot work, saying what to set', async (t) => {
  const cases: [string, unknown, RegExp][] = [
    ['half a serving certificate', { ...DEFAULT_VALUES, tls: { cert: serving.certPem } }, /set all of tls\.cert, tls\.key and tls\.ca, or none/],
    ['half a tenant CA', { ...DEFAULT_VALUES, tenantCA: { key: tenantCa.keyPem } }, /set both tenantCA\.cert and tenantCA\.key, or neither/],
    ['an etcd cluster without a quorum to spare', { etcd: { cluster: { replicas: 2 } } }, /etcd\.cluster\.replicas must be odd and 3 or more/],
    ['one replica', { ...DEFAULT_VALUES, replicaCount: 1 }, /replicaCount/],
    [
      'grace period shorter than delay and drain',
      { ...DEFAULT_VALUES, shutdownDrain: '60s', terminationGracePeriodSeconds: 30 },
      /terminationGracePeriodSeconds \(30\) must be at least .* \(70s\)/,
    ],
    [
      'no time to close after the drain',
      { ...DEFAULT_VALUES, shutdownDelay: '500ms', terminationGracePeriodSeconds: 35 },
      /terminationGracePeriodSeconds \(35\) must be at least .* \(36s\)/,
    ],
  ];
  for (const [name, values, message] of cases) {
    const result = await runHelm(['template', RELEASE, CHART, '--namespace', NAMESPACE, '-f', valuesFile(`bad-${name.replaceAll(' ', '-')}.yaml`, values)]);
    t.not(result.code, 0, name);
    t.match(result.stderr, message, name);
  }
});

t.test('default values: two replicas spread over nodes, probes on the health endpoints, wired to the Service and the Secrets', async (t) => {
  const { objects } = await render(valuesFile('default.yaml', DEFAULT_VALUES));
  const deployment = only(objects, 'Deployment', FULLNAME);
  const pod = deployment.spec.template.spec;
  const container = containerOf(objects);
  t.equal(deployment.spec.replicas, 2);
  t.ok(pod.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution, 'anti-affinity preferred by default');
  t.notOk(pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution);
  t.same(container.readinessProbe.httpGet, { path: '/readyz', port: 'https', scheme: 'HTTPS' });
  t.same(container.livenessProbe.httpGet, { path: '/livez', port: 'https', scheme: 'HTTPS' });
  t.notOk(container.startupProbe, 'no startup probe unless asked for');
  t.same(
    container.ports.map((p: { name: string; containerPort: number }) => [p.name, p.containerPort]),
    [
      ['https', 6443],
      ['metrics', 9464],
    ],
  );
  t.ok(container.resources.requests.cpu && container.resources.requests.memory, 'resource requests set');
  t.same(container.securityContext, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
  t.equal(pod.securityContext.runAsNonRoot, true);
  t.equal(pod.serviceAccountName, FULLNAME);

  const args = argsOf(objects);
  t.equal(container.args[0], 'serve');
  t.equal(args.get('listen'), '0.0.0.0:6443');
  t.equal(args.get('etcd-endpoints'), DEFAULT_VALUES.etcd.endpoints);
  t.equal(args.get('metrics-listen'), '0.0.0.0:9464');
  t.equal(args.get('in-cluster-address'), `${FULLNAME}.${NAMESPACE}.svc:443`, 'tenants pods are sent to the Service');
  t.equal(args.get('in-cluster-ca-file'), '/etc/tenantgate/tls/ca.crt');
  t.equal(args.get('shutdown-delay'), '5s');
  t.equal(args.get('shutdown-drain'), '30s');
  t.ok(pod.terminationGracePeriodSeconds >= 5 + 30 + 5, 'the kubelet waits for delay and drain, and some seconds to close');
  t.notOk(args.has('upstream-kubeconfig'), 'in-cluster config: the ServiceAccount is its upstream identity');
  t.notOk(args.has('confine-upstream-discovery'), "the cluster's discovery is left as it is unless asked");

  // The files the flags name are in the Secrets the volumes mount.
  const mounts = new Map<string, string>(container.volumeMounts.map((m: { name: string; mountPath: string }) => [m.name, m.mountPath]));
  const secretOf = (volume: string) => pod.volumes.find((v: { name: string }) => v.name === volume).secret.secretName as string;
  const tls = only(objects, 'Secret', secretOf('tls'));
  const tenantCaSecret = only(objects, 'Secret', secretOf('tenant-ca'));
  for (const flag of ['tls-cert-file', 'tls-key-file', 'in-cluster-ca-file']) {
    t.equal(args.get(flag)!.slice(0, args.get(flag)!.lastIndexOf('/')), mounts.get('tls'), `--${flag} is in the serving Secret's volume`);
    t.ok(tls.data?.[args.get(flag)!.slice(args.get(flag)!.lastIndexOf('/') + 1)], `--${flag}'s file is a key of ${tls.metadata.name}`);
  }
  for (const flag of ['client-ca-file', 'client-ca-key-file']) {
    t.equal(args.get(flag)!.slice(0, args.get(flag)!.lastIndexOf('/')), mounts.get('tenant-ca'));
    t.ok(tenantCaSecret.data?.[args.get(flag)!.slice(args.get(flag)!.lastIndexOf('/') + 1)], `--${flag}'s file is a key of ${tenantCaSecret.metadata.name}`);
  }
  t.equal(Buffer.from(tls.data!['ca.crt']!, 'base64').toString(), ca.certPem);

  const service = only(objects, 'Service', FULLNAME);
  t.same(
    service.spec.ports.map((p: { name: string; port: number; targetPort: string }) => [p.name, p.port, p.targetPort]),
    [
      ['https', 443, 'https'],
      ['metrics', 9464, 'metrics'],
    ],
  );
  t.same(service.spec.selector, deployment.spec.selector.matchLabels, "the Service selects the Deployment's pods");

  const pdb = only(objects, 'PodDisruptionBudget', FULLNAME);
  t.equal(pdb.spec.maxUnavailable, 1);
  t.same(pdb.spec.selector.matchLabels, deployment.spec.selector.matchLabels);

  const annotations = deployment.spec.template.metadata.annotations;
  t.equal(annotations['prometheus.io/scrape'], 'true');
  t.equal(annotations['prometheus.io/port'], '9464');
  t.equal(annotations['prometheus.io/path'], '/metrics');
  t.equal(objects.filter((o) => o.kind === 'ServiceMonitor').length, 0, 'no ServiceMonitor unless asked for');

  const dashboard = only(objects, 'ConfigMap', `${FULLNAME}-dashboard`);
  t.equal(dashboard.metadata.labels?.grafana_dashboard, '1');
  t.equal((JSON.parse(dashboard.data!['tenantgate.json']!) as { uid: string }).uid, 'tenantgate', "the repository's dashboard, whole");

  const roles = objects.filter((o) => o.kind === 'ClusterRole');
  for (const [group, resource, verb] of [
    ['', 'users', 'impersonate'],
    ['', 'groups', 'impersonate'],
    ['', 'serviceaccounts', 'impersonate'],
    ['authentication.k8s.io', 'userextras', 'impersonate'],
    ['authentication.k8s.io', 'tokenreviews', 'create'],
    ['authorization.k8s.io', 'subjectaccessreviews', 'create'],
    ['', 'pods', 'watch'],
    ['', 'namespaces', 'create'],
    ['rbac.authorization.k8s.io', 'clusterroles', 'escalate'],
    ['rbac.authorization.k8s.io', 'clusterroles', 'bind'],
    ['admissionregistration.k8s.io', 'validatingadmissionpolicies', 'create'],
    ['certificates.k8s.io', 'signers', 'sign'],
    // Constrained impersonation (checked first where the upstream has it), user-info mode.
    ['authentication.k8s.io', 'users', 'impersonate:user-info'],
    ['authentication.k8s.io', 'userextras', 'impersonate:user-info'],
    ['', 'configmaps', 'impersonate-on:user-info:get'],
    ['apps', 'deployments', 'impersonate-on:user-info:patch'],
  ] as const) {
    t.ok(grants(roles, group, resource, verb), `RBAC: ${verb} ${resource}${group === '' ? '' : '.' + group}`);
  }
  t.notOk(grants(roles, '', 'pods', 'create'), "no writes of tenants' workloads with its own identity");
  t.notOk(grants(roles, '', 'secrets', 'update'), 'no writes of Secrets with its own identity');
  const binding = only(objects, 'ClusterRoleBinding');
  t.same(binding.subjects, [{ kind: 'ServiceAccount', name: FULLNAME, namespace: NAMESPACE }]);
  t.equal(binding.roleRef.name, roles[0]!.metadata.name);
});

t.test('no values at all: certificates made by the chart, an etcd cluster of its own, tenantgate wired to both', async (t) => {
  const { objects } = await render(valuesFile('none.yaml', {}));
  const pem = (secret: K8sObject, key: string) => Buffer.from(secret.data![key]!, 'base64').toString();

  const tls = only(objects, 'Secret', `${FULLNAME}-tls`);
  t.equal(tls.metadata.annotations?.['helm.sh/resource-policy'], 'keep', 'the made serving Secret is kept by helm');
  const servingCert = new X509Certificate(pem(tls, 'tls.crt'));
  const servingCa = new X509Certificate(pem(tls, 'ca.crt'));
  t.ok(servingCert.verify(servingCa.publicKey), 'ca.crt verifies tls.crt');
  t.ok(servingCert.checkPrivateKey(createPrivateKey(pem(tls, 'tls.key'))), 'tls.key is its key');
  for (const name of [`${FULLNAME}.${NAMESPACE}.svc`, `${FULLNAME}.${NAMESPACE}.svc.cluster.local`, 'localhost']) {
    t.ok(servingCert.checkHost(name), `the certificate names ${name}`);
  }
  t.ok(servingCert.checkIP('127.0.0.1'), 'and 127.0.0.1 (kubectl port-forward)');

  const tenantCaSecret = only(objects, 'Secret', `${FULLNAME}-tenant-ca`);
  t.equal(tenantCaSecret.metadata.annotations?.['helm.sh/resource-policy'], 'keep', 'the made tenant CA outlives an uninstall');
  const made = { certPem: pem(tenantCaSecret, 'ca.crt'), keyPem: pem(tenantCaSecret, 'ca.key') };
  t.ok(new X509Certificate(made.certPem).ca, 'the tenant CA is a CA');
  // tenantgate signs tenants' certificates with it as it does with any CA given to it.
  const client = issueCertificate(made, { commonName: 'abc123-admin', organizationalUnits: ['abc123'], usage: 'client' });
  t.ok(new X509Certificate(client.certPem).verify(new X509Certificate(made.certPem).publicKey), "tenantgate's PKI signs with the made CA");

  const etcdName = `${FULLNAME}-etcd`;
  const statefulSet = only(objects, 'StatefulSet', etcdName);
  t.equal(statefulSet.spec.replicas, 3);
  t.equal(statefulSet.spec.podManagementPolicy, 'Parallel', 'members start together (none is ready before a quorum)');
  const podLabels = statefulSet.spec.template.metadata.labels as Record<string, string>;
  const affinity = statefulSet.spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm;
  t.equal(affinity.topologyKey, 'kubernetes.io/hostname', 'members spread over nodes');
  t.same(affinity.labelSelector.matchLabels, podLabels);
  t.equal(statefulSet.spec.volumeClaimTemplates[0].spec.resources.requests.storage, '1Gi', 'on volumes of their own');
  t.same(only(objects, 'PodDisruptionBudget', etcdName).spec, { maxUnavailable: 1, selector: { matchLabels: podLabels } }, 'a drain keeps the quorum');
  const headless = only(objects, 'Service', etcdName);
  t.equal(headless.spec.clusterIP, 'None');
  t.equal(headless.spec.publishNotReadyAddresses, true, 'members find each other before they are ready');
  const tenantgatePods = only(objects, 'Deployment', FULLNAME).spec.template.metadata.labels as Record<string, string>;
  const selects = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);
  t.notOk(selects(only(objects, 'Service', FULLNAME).spec.selector, podLabels), "tenantgate's Service never selects etcd's pods");
  const policy = only(objects, 'NetworkPolicy', etcdName);
  t.same(policy.spec.podSelector.matchLabels, podLabels);
  const clientFrom = policy.spec.ingress.find((rule: any) => rule.ports[0].port === 'client').from.map((peer: any) => peer.podSelector.matchLabels);
  t.ok(
    clientFrom.some((selector: Record<string, string>) => selects(selector, tenantgatePods)),
    "tenantgate's pods reach etcd's client port",
  );
  t.equal(clientFrom.length, 2, 'and only they and the members');

  const args = argsOf(objects);
  const members = [0, 1, 2].map((i) => `http://${etcdName}-${i}.${etcdName}.${NAMESPACE}.svc:2379`);
  t.equal(args.get('etcd-endpoints'), members.join(','), "tenantgate's store is every member");
  const etcdArgs = statefulSet.spec.template.spec.containers[0].args as string[];
  t.ok(
    etcdArgs.includes(`--initial-cluster=${[0, 1, 2].map((i) => `${etcdName}-${i}=http://${etcdName}-${i}.${etcdName}.${NAMESPACE}.svc:2380`).join(',')}`),
    'the members know each other by the same names',
  );
});

t.test('an upgrade keeps the certificates the chart made (helm upgrade --install --dry-run=server)', async (t) => {
  const first = await render(valuesFile('first.yaml', {}));
  const madeSecrets = first.objects.filter((object) => object.kind === 'Secret');
  t.equal(madeSecrets.length, 2);
  // As the first install left them: in the cluster, owned by the release.
  for (const secret of madeSecrets) {
    const owned = {
      ...secret,
      metadata: {
        ...secret.metadata,
        annotations: { ...secret.metadata.annotations, 'meta.helm.sh/release-name': RELEASE, 'meta.helm.sh/release-namespace': NAMESPACE },
      },
    };
    await kubectlOk(['apply', '-f', '-'], JSON.stringify(owned));
  }
  try {
    const out = await helmOk(['upgrade', '--install', RELEASE, CHART, '--namespace', NAMESPACE, '--dry-run=server', '--kubeconfig', rig.adminKubeconfigPath]);
    const manifest = out.slice(out.indexOf('MANIFEST:') + 'MANIFEST:'.length, out.indexOf('NOTES:'));
    const upgraded = parseAllDocuments(manifest)
      .map((document) => document.toJS() as K8sObject | null)
      .filter((object): object is K8sObject => object?.kind === 'Secret');
    for (const secret of madeSecrets) {
      const again = upgraded.find((object) => object.metadata.name === secret.metadata.name);
      t.same(again?.data, secret.data, `${secret.metadata.name}: the same certificate and key, not new ones`);
    }
    const notes = out.slice(out.indexOf('NOTES:'));
    t.match(notes, `made by the chart; its CA is ca.crt there`);
    t.match(notes, `3 members of statefulset/${FULLNAME}-etcd`);
  } finally {
    await kubectlOk(['-n', NAMESPACE, 'delete', 'secret', ...madeSecrets.map((secret) => secret.metadata.name)]);
  }
});

t.test('custom values: replicas, required anti-affinity, existing Secrets, custom address, ServiceMonitor, resources', async (t) => {
  const { objects } = await render(valuesFile('custom.yaml', CUSTOM_VALUES));
  const deployment = only(objects, 'Deployment', FULLNAME);
  const pod = deployment.spec.template.spec;
  const container = containerOf(objects);
  t.equal(deployment.spec.replicas, 3);
  t.equal(container.image, 'registry.example.com/tenantgate:1.2.3');
  const required = pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution;
  t.equal(required[0].topologyKey, 'topology.kubernetes.io/zone');
  t.same(required[0].labelSelector.matchLabels, deployment.spec.selector.matchLabels);
  t.notOk(pod.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution);
  t.same(container.startupProbe.httpGet, { path: '/livez', port: 'https', scheme: 'HTTPS' });
  t.same(container.resources, CUSTOM_VALUES.resources);

  const args = argsOf(objects);
  t.equal(args.get('in-cluster-address'), '10.0.0.50:443');
  t.equal(only(objects, 'Service', FULLNAME).spec.clusterIP, '10.0.0.50', 'the Service has the pinned address');
  t.equal(args.get('etcd-endpoints'), 'http://10.1.0.5:2379');
  t.equal(args.get('etcd-prefix'), '/tg/tenants/');
  t.equal(args.get('metrics-listen'), '0.0.0.0:9100');
  t.equal(args.get('max-inflight'), '800', 'extraArgs reach tenantgate');
  t.equal(args.get('confine-upstream-discovery'), 'true');
  t.equal(args.get('shutdown-drain'), '60s');
  t.equal(pod.terminationGracePeriodSeconds, 90);

  t.equal(objects.filter((o) => o.kind === 'Secret').length, 0, 'existing Secrets: the chart makes none');
  t.same(
    pod.volumes
      .filter((v: { secret?: unknown }) => v.secret !== undefined)
      .map((v: { secret: { secretName: string } }) => v.secret.secretName)
      .sort(),
    ['tenantgate-serving', 'tenantgate-tenant-ca'],
  );
  t.notOk(deployment.spec.template.metadata.annotations['prometheus.io/scrape'], 'scrape annotations off when asked');

  const monitor = only(objects, 'ServiceMonitor', FULLNAME);
  t.equal(monitor.metadata.labels?.release, 'prometheus');
  t.same(monitor.spec.endpoints, [{ port: 'metrics', path: '/metrics', scheme: 'http', interval: '15s' }]);
  const serviceLabels = only(objects, 'Service', FULLNAME).metadata.labels ?? {};
  for (const [key, value] of Object.entries(monitor.spec.selector.matchLabels as Record<string, string>)) {
    t.equal(serviceLabels[key], value, `the ServiceMonitor selects the Service by ${key}`);
  }
  t.equal(only(objects, 'NetworkPolicy', 'tg-ingress').spec.podSelector.matchLabels['app.kubernetes.io/instance'], RELEASE, 'extraObjects are templated');
});

t.test('every rendered object is accepted by kube-apiserver (kubectl apply --dry-run=server)', async (t) => {
  // The ServiceMonitor's kind must exist: the real CRD of prometheus-operator, applied for real.
  await kubectlOk(['apply', '--server-side', '-f', serviceMonitorCrd]);
  await kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', 'crd/servicemonitors.monitoring.coreos.com']);
  for (const [name, values] of [
    ['none', {}],
    ['default', DEFAULT_VALUES],
    ['custom', CUSTOM_VALUES],
  ] as const) {
    const { yaml, objects } = await render(valuesFile(`dry-run-${name}.yaml`, values));
    const applied = await rig.kubectl(['apply', '--dry-run=server', '-o', 'name', '-f', '-'], { input: yaml });
    t.equal(applied.code, 0, `${name}: ${applied.stderr}`);
    const accepted = applied.stdout
      .trim()
      .split('\n')
      .filter((line) => line !== '');
    t.equal(accepted.length, objects.length, `${name}: all ${objects.length} objects (${[...new Set(objects.map((o) => o.kind))].join(', ')}) accepted`);
  }
});

t.test('helm install --dry-run=server against the rig passes and its notes say where tenantgate answers', async (t) => {
  const out = await helmOk([
    'install',
    RELEASE,
    CHART,
    '--namespace',
    NAMESPACE,
    '--dry-run=server',
    '--kubeconfig',
    rig.adminKubeconfigPath,
    '-f',
    valuesFile('install.yaml', DEFAULT_VALUES),
  ]);
  const notes = out.slice(out.indexOf('NOTES:'));
  t.match(notes, `https://${FULLNAME}.${NAMESPACE}.svc:443`);
  t.match(notes, `rollout status deployment/${FULLNAME}`);
  t.match(notes, 'tenantgate tenant create');
});

t.test('the flags the chart passes are flags of tenantgate serve', async (t) => {
  const help = await runCommand(process.execPath, [CLI, 'serve', '--help'], { timeoutMs: 30_000 });
  const known = new Set([...`${help.stdout}${help.stderr}`.matchAll(/--([a-z][a-z0-9-]*)/g)].map((m) => m[1]));
  for (const values of [{}, DEFAULT_VALUES, CUSTOM_VALUES]) {
    for (const flag of argsOf((await render(valuesFile('flags.yaml', values))).objects).keys())
      t.ok(known.has(flag), `--${flag} is a flag of tenantgate serve`);
  }
});

t.test("tenantgate serves a tenant with nothing but the chart's ServiceAccount and RBAC", async (t) => {
  // The chart's ServiceAccount, ClusterRole and ClusterRoleBinding, for real.
  const rbac = await helmOk([
    'template',
    RELEASE,
    CHART,
    '--namespace',
    NAMESPACE,
    '-f',
    valuesFile('rbac.yaml', DEFAULT_VALUES),
    '--show-only',
    'templates/serviceaccount.yaml',
    '--show-only',
    'templates/rbac.yaml',
  ]);
  await kubectlOk(['apply', '-f', '-'], rbac);
  const token = (await kubectlOk(['-n', NAMESPACE, 'create', 'token', FULLNAME, '--duration=1h'])).trim();

  const dir = join(scratch, 'gateway');
  const files = writeGatewayFiles(dir, rig);
  const upstreamKubeconfig = join(dir, 'service-account.kubeconfig');
  writeFileSync(upstreamKubeconfig, renderKubeconfig({ server: rig.server, caPem: rig.caPem, token }, 'upstream'), { mode: 0o600 });
  const serveArgs = [...files.serveArgs];
  serveArgs[serveArgs.indexOf('--upstream-kubeconfig') + 1] = upstreamKubeconfig;
  // As the chart deploys it: a serving certificate of a CA of its own (ca.crt beside it: --in-cluster-ca-file), not the
  // tenant CA, which only signs clients.
  const servingCa = createCertificateAuthority('chart-test-serving-ca');
  const ownServing = issueCertificate(servingCa, { commonName: 'tenantgate', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], usage: 'server' });
  writeFileSync(files.tlsCertFile, ownServing.certPem);
  writeFileSync(files.tlsKeyFile, ownServing.keyPem);
  const servingCaFile = join(dir, 'serving-ca.crt');
  writeFileSync(servingCaFile, servingCa.certPem);
  serveArgs[serveArgs.indexOf('--in-cluster-ca-file') + 1] = servingCaFile;
  // An in-cluster address that is an IP: tenants' kubernetes Services get an EndpointSlice, their pods the access policy.
  const gateway = await spawnGateway({ ...files, serveArgs }, ['--confine-upstream-discovery', '--in-cluster-address', '10.0.200.1:443']);
  t.teardown(() => stopChild(gateway.child));
  // The kubelet's probes, as the chart writes them: HTTPS, no client certificate.
  const probed = containerOf((await render(valuesFile('probes.yaml', DEFAULT_VALUES))).objects);
  for (const probe of [probed.readinessProbe, probed.livenessProbe]) {
    t.equal(await statusWithoutClientCertificate(`${gateway.url}${probe.httpGet.path}`, servingCa.certPem), 200, `${probe.httpGet.path} answers the kubelet`);
  }

  // Its own calls: every log line but the one per request (a tenant's requests here all succeed, checked below).
  const refusals = () => gateway.logs.filter((line) => /forbidden|\b403\b/i.test(line) && !line.includes('"msg":"request"'));

  // An administrator creates a tenant through the Tenant API; tenantgate bootstraps it upstream as the ServiceAccount.
  const adminKubeconfig = writeClientKubeconfig(join(dir, 'admin.kubeconfig'), gateway.url, files.ca, DEV_ADMIN);
  writeFileSync(adminKubeconfig, renderKubeconfig({ ...loadKubeconfig(adminKubeconfig), caPem: servingCa.certPem }, 'tenantgate'), { mode: 0o600 });
  const tenantKubeconfig = join(dir, 'tenant.kubeconfig');
  await withClient(adminKubeconfig, async (pool) => {
    const created = await upstreamJson(pool, 'POST', TENANTS_PATH, { apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: 'chrt01' }, spec: {} });
    t.equal(created.status, 201, JSON.stringify(created.body));
    await waitUntilReady(pool, 'chrt01');
    writeFileSync(tenantKubeconfig, await fetchKubeconfig(pool, 'chrt01'), { mode: 0o600 });
  });
  t.equal(loadKubeconfig(tenantKubeconfig).caPem, servingCa.certPem, "the tenant's kubeconfig trusts the serving CA, not the tenant CA");
  const asTenant = (args: string[], input?: string) => rig.kubectl(args, { kubeconfig: tenantKubeconfig, input });

  const objects = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'reader', namespace: 'shop' } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'shop' }, data: { color: 'blue' } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'shop' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx' }] } },
      },
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'reader', namespace: 'shop' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'reader', namespace: 'shop' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: 'shop' }],
    },
    exampleCrd('Widget', 'widgets'),
  ];
  for (const object of objects) {
    const created = await asTenant(['create', '-f', '-'], JSON.stringify(object));
    t.equal(created.code, 0, `create ${object.kind} ${object.metadata.name}: ${created.stderr}`);
  }
  const established = await asTenant(['wait', '--for=condition=Established', '--timeout=30s', 'crd/widgets.example.com']);
  t.equal(established.code, 0, `the tenant's CRD is established ${established.stderr}`);
  const widget = await asTenant(
    ['create', '-f', '-'],
    JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1', namespace: 'shop' }, spec: { size: 3 } }),
  );
  t.equal(widget.code, 0, `create Widget w1: ${widget.stderr}`);

  const collections: [string, string][] = [
    ['/api/v1/namespaces', 'shop'],
    ['/api/v1/namespaces/shop/configmaps', 'settings'],
    ['/api/v1/configmaps', 'settings'],
    ['/apis/apps/v1/namespaces/shop/deployments', 'web'],
    ['/apis/rbac.authorization.k8s.io/v1/namespaces/shop/roles', 'reader'],
    ['/apis/rbac.authorization.k8s.io/v1/rolebindings', 'reader'],
    ['/apis/apiextensions.k8s.io/v1/customresourcedefinitions', 'widgets.example.com'],
    ['/apis/example.com/v1/namespaces/shop/widgets', 'w1'],
    ['/apis/example.com/v1/widgets', 'w1'],
  ];
  for (const [path, name] of collections) {
    const listed = await asTenant(['get', '--raw', path]);
    t.equal(listed.code, 0, `list ${path}: ${listed.stderr}`);
    if (listed.code !== 0) continue;
    t.ok(
      (JSON.parse(listed.stdout) as { items: K8sObject[] }).items.some((item) => item.metadata.name === name),
      `list ${path} shows ${name}`,
    );
    // A watch from the start: its initial ADDED events, ended by the server after a second.
    const watched = await asTenant(['get', '--raw', `${path}?watch=1&timeoutSeconds=1`]);
    t.equal(watched.code, 0, `watch ${path}: ${watched.stderr}`);
    const events = watched.stdout
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { type: string; object: K8sObject });
    t.ok(
      events.some((event) => event.type === 'ADDED' && event.object.metadata.name === name),
      `watch ${path} shows ${name}`,
    );
  }

  // The tenant's service account with a token minted through tenantgate: tenantgate accepts it by a TokenReview.
  const saToken = await asTenant(['-n', 'shop', 'create', 'token', 'reader', '--duration=1h']);
  t.equal(saToken.code, 0, `create token ${saToken.stderr}`);
  const saKubeconfig = join(dir, 'reader.kubeconfig');
  writeFileSync(saKubeconfig, renderKubeconfig({ server: gateway.url, caPem: servingCa.certPem, token: saToken.stdout.trim() }, 'tenantgate'), { mode: 0o600 });
  const readBySa = await rig.kubectl(['-n', 'shop', 'get', 'configmap', 'settings', '-o', 'jsonpath={.data.color}'], { kubeconfig: saKubeconfig });
  t.equal(readBySa.stdout, 'blue', `the service account reads what its RoleBinding grants ${readBySa.stderr}`);

  // A FlowSchema: validated by a dry-run create of the real kind, kept as tenantgate's stored kind.
  const flowSchema = await asTenant(
    ['create', '-f', '-'],
    JSON.stringify({
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      kind: 'FlowSchema',
      metadata: { name: 'shop' },
      spec: {
        priorityLevelConfiguration: { name: 'catch-all' },
        matchingPrecedence: 900,
        rules: [
          {
            subjects: [{ kind: 'Group', group: { name: 'system:authenticated' } }],
            resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'] }],
          },
        ],
      },
    }),
  );
  t.equal(flowSchema.code, 0, `create FlowSchema ${flowSchema.stderr}`);

  // A client CSR the tenant approves is signed by tenantgate with the tenant CA.
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const request = forge.pki.createCertificationRequest();
  request.publicKey = forge.pki.publicKeyFromPem(publicKey);
  request.setSubject([{ name: 'commonName', value: 'bob' }]);
  request.sign(forge.pki.privateKeyFromPem(privateKey), forge.md.sha256.create());
  const csr = await asTenant(
    ['create', '-f', '-'],
    JSON.stringify({
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name: 'bob' },
      spec: {
        request: Buffer.from(forge.pki.certificationRequestToPem(request)).toString('base64'),
        signerName: 'kubernetes.io/kube-apiserver-client',
        usages: ['client auth'],
      },
    }),
  );
  t.equal(csr.code, 0, `create CSR ${csr.stderr}`);
  const approved = await asTenant(['certificate', 'approve', 'bob']);
  t.equal(approved.code, 0, `approve CSR ${approved.stderr}`);
  t.ok(
    await within(10_000, async () => (await asTenant(['get', 'csr', 'bob', '-o', 'jsonpath={.status.certificate}'])).stdout !== ''),
    'the CSR gets its certificate',
  );

  // The administrator deletes the tenant: everything it had upstream goes.
  const deleted = await rig.kubectl(['delete', 'tenant', 'chrt01', '--wait=false'], { kubeconfig: adminKubeconfig });
  t.equal(deleted.code, 0, `delete tenant ${deleted.stderr}`);
  t.ok(await within(60_000, async () => (await rig.kubectl(['get', 'tenant', 'chrt01'], { kubeconfig: adminKubeconfig })).code !== 0), 'the tenant is gone');
  const namespacesLeft = (await kubectlOk(['get', 'namespaces', '-o', 'name'])).split('\n').filter((name) => name.startsWith('namespace/chrt01-'));
  t.same(namespacesLeft, [], 'none of its namespaces is left upstream');
  t.equal((await rig.kubectl(['get', 'crd', 'widgets.chrt01-example.com'])).code, 1, 'nor its CRD');

  t.same(refusals(), [], 'tenantgate logged no refusal of its own calls');
});

/** The status of a GET over HTTPS without a client certificate (the kubelet's probe). */
function statusWithoutClientCertificate(url: string, caPem: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpsRequest(url, { ca: caPem, timeout: 5_000 }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('timeout', () => request.destroy(new Error(`GET ${url} timed out`)));
    request.on('error', reject);
    request.end();
  });
}

/** Polls `check` until it holds (true) or `timeoutMs` passes (false). */
async function within(timeoutMs: number, check: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
