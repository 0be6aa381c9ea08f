// tenantgate in a pod (its own upstream credentials from its service account, the token re-read as the kubelet
// rotates it) and its flags for tenants' pods and for shutdown.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { parseServeConfig, type ServeConfig } from '../../lib/config.ts';
import { inClusterAddress } from '../../lib/tenants/cluster-service.ts';
import { CA_ANNOTATION, inClusterAccessObjects, inClusterAccessPolicy, TENANT_IN_CLUSTER_ACCESS } from '../../lib/tenants/in-cluster-access.ts';
import { bearerAuthorization, inClusterCredentials, renderKubeconfig } from '../../lib/upstream/kubeconfig.ts';

const dir = mkdtempSync(join(tmpdir(), 'in-cluster-test-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

t.test("in a pod, the upstream is the pod's API server with its service account's token, read again as it rotates", async (t) => {
  const accountDir = mkdtempSync(join(dir, 'sa-'));
  writeFileSync(join(accountDir, 'token'), 'first-token\n');
  writeFileSync(join(accountDir, 'ca.crt'), 'CLUSTER-CA');
  const credentials = inClusterCredentials({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, accountDir);
  t.equal(credentials.server, 'https://10.96.0.1:443');
  t.equal(credentials.caPem, 'CLUSTER-CA');
  t.equal(bearerAuthorization(credentials), 'Bearer first-token');
  writeFileSync(join(accountDir, 'token'), 'second-token\n');
  t.equal(bearerAuthorization(credentials), 'Bearer first-token', 'not read on every request');
  const now = Date.now;
  Date.now = () => now() + 61_000;
  t.teardown(() => (Date.now = now));
  t.equal(bearerAuthorization(credentials), 'Bearer second-token', 'a minute on, the rotated token');
  t.equal(
    inClusterCredentials({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '6443' }, accountDir).server,
    'https://[fd00::1]:6443',
    'IPv6 in brackets',
  );
  t.throws(() => inClusterCredentials({}, accountDir), /--upstream-kubeconfig is required outside a pod/);
  t.throws(
    () => inClusterCredentials({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, join(dir, 'missing')),
    /token/,
    'a missing token fails at start, naming the file',
  );
});

t.test('flags: in-cluster address and CA, shutdown delay and drain', async (t) => {
  const base = [
    `--tls-cert-file=${file('tls.crt', 'SERVING-CERT')}`,
    `--tls-key-file=${file('tls.key', 'KEY')}`,
    `--client-ca-file=${file('ca.crt', 'CA')}`,
    `--upstream-kubeconfig=${file('upstream.kubeconfig', renderKubeconfig({ server: 'https://127.0.0.1:6443', caPem: 'CA', token: 't' }))}`,
  ];
  const parse = (extra: string[]) => parseServeConfig([...base, ...extra]) as ServeConfig;
  t.same(parse([]).inCluster, { address: undefined, caPem: 'SERVING-CERT' }, 'by default: the listen address and the serving certificate');
  t.same(parse(['--in-cluster-address', 'tenantgate.tenantgate.svc:443', `--in-cluster-ca-file=${file('bundle.crt', 'BUNDLE')}`]).inCluster, {
    address: { host: 'tenantgate.tenantgate.svc', port: 443 },
    caPem: 'BUNDLE',
  });
  t.equal(parse(['--in-cluster-address=']).inCluster, null, "'' leaves tenants' pods alone");
  t.throws(() => parse(['--in-cluster-address', 'tenantgate.svc']), /expected address:port/);
  t.throws(() => parse(['--in-cluster-address', ':443']), /expected host:port/);
  t.same(parse([]).shutdown, { delayMs: 0, drainMs: 30_000 });
  t.same(parse(['--shutdown-delay', '5s', '--shutdown-drain', '500ms']).shutdown, { delayMs: 5_000, drainMs: 500 });
  t.throws(() => parse(['--shutdown-drain', 'soon']), /--shutdown-drain must be a duration/);
  t.same(
    inClusterAddress({ host: '0.0.0.0', port: 6443 }, { host: '10.0.0.7', port: 443 }),
    { host: '10.0.0.7', port: 443 },
    'the configured address wins over the listen one',
  );
});

t.test("the in-cluster access policy carries the CA as the pods' annotation, whatever its text", async (t) => {
  const caPem = "-----BEGIN CERTIFICATE-----\r\nAB'C\\D\n-----END CERTIFICATE-----\n";
  const policy = inClusterAccessPolicy({ address: { host: '10.0.0.7', port: 443 }, caPem }) as any;
  const expression: string = policy.spec.mutations.map((m: any) => m.applyConfiguration?.expression ?? '').join('\n');
  // The CEL literal holds no raw line break and unescapes to the PEM (CEL's escapes are JSON's for these characters).
  const literal = new RegExp(`'${CA_ANNOTATION.replaceAll('.', '\\.')}': '((?:[^'\\\\]|\\\\.)*)'`).exec(expression)![1]!;
  t.notMatch(literal, /[\r\n]/);
  t.equal(JSON.parse(`"${literal.replaceAll("\\'", "'")}"`), caPem);
  t.match(policy.spec.matchConstraints.namespaceSelector, { matchExpressions: [{ key: 'kubezoo.io/tenant', operator: 'Exists' }] }, "only tenants' namespaces");
  t.same(policy.spec.matchConstraints.resourceRules[0].operations, ['CREATE'], 'pod creation only: a pod update keeps what its creation got');
  const [kept, binding] = inClusterAccessObjects({ address: { host: '10.0.0.7', port: 443 }, caPem });
  t.equal(kept!.object.metadata.name, TENANT_IN_CLUSTER_ACCESS);
  t.match(binding!.object, { spec: { policyName: TENANT_IN_CLUSTER_ACCESS } });
  t.match(TENANT_IN_CLUSTER_ACCESS, /^tenantg/, 'no tenant can name it (tenant + g is no <id>- prefix)');
});
