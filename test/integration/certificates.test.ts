// CertificateSigningRequests through a tenant, against the real rig: a tenant admin approves a CSR for
// kubernetes.io/kube-apiserver-client and logs in with the certificate tenantgate signs; another tenant with the same
// names sees and touches nothing of it; upstream, no signer of the upstream's ever gets a tenant's CSR.
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import forge from 'node-forge';
import t from 'tap';
import { TENANT_CLUSTER_SCOPE_GROUP } from '../../lib/auth/impersonation.ts';
import { loadKubeconfig, renderKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { connectH2, h2Request } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { poll, succeeded } from '../helpers/kit.ts';

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;

const A = 'csra01';
const B = 'csrb02';
const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client';

/** A private key made with node:crypto and a PKCS#10 request for it (node-forge writes the request). */
function keyAndRequest(commonName: string, groups: string[] = []): { keyPem: string; requestPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const request = forge.pki.createCertificationRequest();
  request.publicKey = forge.pki.publicKeyFromPem(publicKey);
  request.setSubject([...groups.map((value) => ({ name: 'organizationName', value })), { name: 'commonName', value: commonName }]);
  request.sign(forge.pki.privateKeyFromPem(privateKey), forge.md.sha256.create());
  return { keyPem: privateKey, requestPem: forge.pki.certificationRequestToPem(request) };
}

function csrYaml(name: string, requestPem: string, signerName = CLIENT_SIGNER, usages = ['client auth'], expirationSeconds = 3600): string {
  return JSON.stringify({
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name },
    spec: { request: Buffer.from(requestPem).toString('base64'), signerName, usages, expirationSeconds },
  });
}

async function certificateOf(tenant: TestTenant, name: string): Promise<string | undefined> {
  return poll(async () => {
    const r = await tenant.kubectl(['get', 'csr', name, '-o', 'jsonpath={.status.certificate}']);
    return r.code === 0 && r.stdout !== '' ? Buffer.from(r.stdout, 'base64').toString() : undefined;
  });
}

let aliceKey: { keyPem: string; requestPem: string };
let aliceKubeconfig = '';

t.before(async () => {
  stack = await startStack();
  alpha = await createTestTenant(stack, A);
  bravo = await createTestTenant(stack, B);
  aliceKey = keyAndRequest('alice', ['team']);
});
t.teardown(() => stack?.stop());

t.test('certificates.k8s.io is in the tenant discovery with CSRs and their approval and status', async (t) => {
  const resources = await succeeded(alpha.kubectl(['api-resources', '--api-group=certificates.k8s.io', '-o', 'name']), 'api-resources');
  t.match(resources, /certificatesigningrequests\.certificates\.k8s\.io/);
  t.match(resources, /clustertrustbundles|^/, 'clustertrustbundles only where the upstream serves them');
  const version = await succeeded(alpha.kubectl(['get', '--raw', '/apis/certificates.k8s.io/v1']), 'group version');
  const names = (JSON.parse(version).resources as { name: string }[]).map((resource) => resource.name);
  t.ok(names.includes('certificatesigningrequests/approval') && names.includes('certificatesigningrequests/status'), names.join(','));
});

t.test('a tenant admin approves a kube-apiserver-client CSR and logs in with the certificate as that tenant user', async (t) => {
  await succeeded(alpha.kubectl(['apply', '-f', '-'], { input: csrYaml('alice', aliceKey.requestPem) }), 'create csr');
  const shown = JSON.parse(await succeeded(alpha.kubectl(['get', 'csr', 'alice', '-o', 'json']), 'get csr'));
  t.equal(shown.spec.signerName, CLIENT_SIGNER, 'the tenant sees its signer name');
  t.equal(shown.spec.username, 'admin', 'and itself as the requester');
  const table = await succeeded(alpha.kubectl(['get', 'csr', 'alice']), 'kubectl get csr');
  t.match(table, /alice\s+\S+\s+kubernetes\.io\/kube-apiserver-client\s+admin\s+/, 'kubectl get shows the signer and requestor in the tenant names');
  t.notMatch(table, /tenantgate\.kubezoo\.io|csra01/);
  await succeeded(alpha.kubectl(['certificate', 'approve', 'alice']), 'approve');
  const certificatePem = await certificateOf(alpha, 'alice');
  t.ok(certificatePem, 'signed');
  if (certificatePem === undefined) return;
  const certificate = new X509Certificate(certificatePem);
  t.ok(certificate.checkIssued(new X509Certificate(stack.files.ca.certPem)), 'by the tenant CA');
  const lifetime = Date.parse(certificate.validTo) - Date.parse(certificate.validFrom);
  t.ok(lifetime <= 65 * 60_000 && lifetime >= 60 * 60_000, `as long as asked (expirationSeconds 3600): ${lifetime / 60_000} minutes`);

  aliceKubeconfig = join(stack.dir, 'alice-from-csr.kubeconfig');
  writeFileSync(
    aliceKubeconfig,
    renderKubeconfig({ server: stack.gatewayUrl, caPem: stack.files.ca.certPem, certPem: certificatePem, keyPem: aliceKey.keyPem }),
  );
  const whoami = JSON.parse(await succeeded(stack.kubectl(['auth', 'whoami', '-o', 'json'], { kubeconfig: aliceKubeconfig }), 'whoami'));
  t.equal(whoami.status.userInfo.username, 'alice');
  t.same([...whoami.status.userInfo.groups].sort(), ['system:authenticated', 'team']);

  const refused = await stack.kubectl(['get', 'configmaps', '-n', 'default'], { kubeconfig: aliceKubeconfig });
  t.match(refused.stderr, /User "alice" cannot list resource "configmaps"/, 'alice holds no rights yet');
  await succeeded(alpha.kubectl(['create', 'rolebinding', 'alice-views', '-n', 'default', '--clusterrole=view', '--user=alice']), 'rolebinding');
  const granted = await poll(async () => {
    const r = await stack.kubectl(['get', 'configmaps', '-n', 'default', '-o', 'name'], { kubeconfig: aliceKubeconfig });
    return r.code === 0 ? r.stdout : undefined;
  });
  t.match(granted, /configmap\/kube-root-ca.crt/, 'the tenant RBAC for alice applies');
});

t.test('upstream, the CSR names a signer of the tenant signer domain and only tenantgate signed it', async (t) => {
  const stored = JSON.parse(await succeeded(stack.kubectlDirect(['get', 'csr', `${A}-alice`, '-o', 'json']), 'upstream csr'));
  t.equal(stored.spec.signerName, `${A}.tenants.tenantgate.kubezoo.io/d2.kubernetes.io.kube-apiserver-client`);
  t.equal(stored.metadata.labels['kubezoo.io/tenant'], A);
  const issued = new X509Certificate(Buffer.from(stored.status.certificate, 'base64').toString());
  t.ok(issued.checkIssued(new X509Certificate(stack.files.ca.certPem)), 'the tenant CA signed it');
  t.match(issued.subject, new RegExp(`CN=${A}-alice`), "the tenant's certificate form");
  t.notOk(issued.checkIssued(new X509Certificate(stack.rig.caPem)), "never the upstream's CA (kube-controller-manager's signers)");

  // Approved requests for a signer nobody runs in the tenant stay unsigned, as in a cluster without that signer.
  const other = keyAndRequest('bot');
  await succeeded(alpha.kubectl(['apply', '-f', '-'], { input: csrYaml('for-example', other.requestPem, 'example.com/signer') }), 'create');
  await succeeded(alpha.kubectl(['certificate', 'approve', 'for-example']), 'approve');
  // kubernetes.io/kube-apiserver-client-kubelet is the upstream's too (kube-controller-manager signs it): not here.
  await succeeded(
    alpha.kubectl(['apply', '-f', '-'], {
      input: csrYaml('kubelet-like', keyAndRequest('system:node:n1', ['system:nodes']).requestPem, 'kubernetes.io/kube-apiserver-client-kubelet', [
        'digital signature',
        'client auth',
      ]),
    }),
    'create',
  );
  await succeeded(alpha.kubectl(['certificate', 'approve', 'kubelet-like']), 'approve');
  await new Promise((resolve) => setTimeout(resolve, 4000));
  for (const name of ['for-example', 'kubelet-like']) {
    const upstream = JSON.parse(await succeeded(stack.kubectlDirect(['get', 'csr', `${A}-${name}`, '-o', 'json']), 'upstream'));
    t.match(upstream.status.conditions, [{ type: 'Approved', status: 'True' }], `${name} approved`);
    t.notOk(upstream.status.certificate, `${name}: nobody signed it`);
    t.ok(upstream.spec.signerName.startsWith(`${A}.tenants.tenantgate.kubezoo.io/`), `${name}: in the tenant signer domain`);
  }
});

t.test('what the apiserver refuses for its client signer is refused in the tenant, in its words', async (t) => {
  const masters = keyAndRequest('root', ['system:masters']);
  const refused = await alpha.kubectl(['apply', '-f', '-'], { input: csrYaml('root', masters.requestPem) });
  t.not(refused.code, 0);
  t.match(refused.stderr, /use of kubernetes.io\/kube-apiserver-client signer with system:masters group is not allowed/);
  const badUsage = keyAndRequest('server');
  await succeeded(alpha.kubectl(['apply', '-f', '-'], { input: csrYaml('server', badUsage.requestPem, CLIENT_SIGNER, ['server auth']) }), 'create');
  await succeeded(alpha.kubectl(['certificate', 'approve', 'server']), 'approve');
  const failed = await poll(async () => {
    const r = JSON.parse(await succeeded(alpha.kubectl(['get', 'csr', 'server', '-o', 'json']), 'get'));
    return (r.status.conditions ?? []).find((condition: { type: string }) => condition.type === 'Failed');
  });
  t.match(failed, { status: 'True', reason: 'SignerValidationFailure', message: 'invalid usage for client certificate: server auth' });
  const tooLong = await alpha.kubectl(['apply', '-f', '-'], {
    input: csrYaml('long', badUsage.requestPem, `example.com/${'p'.repeat(253)}.${'q'.repeat(63)}`),
  });
  t.match(tooLong.stderr, /is invalid: spec.signerName: Too long/, '422 in the tenant terms');
  t.notMatch(tooLong.stderr, /tenantgate\.kubezoo\.io/);
});

t.test('tenant B with the same CSR names sees and touches nothing of tenant A', async (t) => {
  const mine = keyAndRequest('bob');
  await succeeded(bravo.kubectl(['apply', '-f', '-'], { input: csrYaml('alice', mine.requestPem, 'example.com/b-signer') }), 'b creates its alice');
  await succeeded(bravo.kubectl(['apply', '-f', '-'], { input: csrYaml('keep', mine.requestPem) }), 'b creates another');
  const listed = await succeeded(bravo.kubectl(['get', 'csr', '-o', 'jsonpath={range .items[*]}{.metadata.name}={.spec.signerName}{"\\n"}{end}']), 'list');
  t.equal(listed.trim(), `alice=example.com/b-signer\nkeep=${CLIENT_SIGNER}`, 'B lists only its own');
  const selected = await succeeded(bravo.kubectl(['get', 'csr', `--field-selector=spec.signerName=${CLIENT_SIGNER}`, '-o', 'name']), 'selector');
  t.equal(selected.trim(), 'certificatesigningrequest.certificates.k8s.io/keep', "a field selector on the signer name finds B's own, nothing of A's");
  const onlyA = await bravo.kubectl(['get', 'csr', 'for-example']);
  t.match(onlyA.stderr, /NotFound|not found/);
  const approveA = await bravo.kubectl(['certificate', 'approve', 'kubelet-like']);
  t.not(approveA.code, 0, "B cannot approve A's CSR");
  const deleteA = await bravo.kubectl(['delete', 'csr', 'for-example']);
  t.match(deleteA.stderr, /NotFound|not found/);
  const watched = await withWatch(bravo.kubeconfig);
  t.notMatch(watched, new RegExp(`${A}|for-example|kubelet-like`), "B's watch shows nothing of A's");
  t.match(watched, /b-signer/, "B's watch shows its own");
  // Protobuf, as client-go's typed clients ask: the same view.
  const protobuf = await withWatch(bravo.kubeconfig, 'application/vnd.kubernetes.protobuf');
  t.notMatch(protobuf, new RegExp(`${A}|for-example|kubelet-like`), "B's protobuf watch shows nothing of A's");
  t.match(protobuf, /example\.com\/b-signer/, 'and its own, in its names');
  await succeeded(bravo.kubectl(['delete', 'csr', 'alice']), 'b deletes its alice');
  t.equal(
    (await alpha.kubectl(['get', 'csr', 'alice', '-o', 'name'])).stdout.trim(),
    'certificatesigningrequest.certificates.k8s.io/alice',
    "A's alice is still there",
  );
});

async function withWatch(kubeconfig: string, accept = 'application/json'): Promise<string> {
  const session = connectH2(loadKubeconfig(kubeconfig));
  try {
    const answer = await h2Request(session, 'GET', '/apis/certificates.k8s.io/v1/certificatesigningrequests?watch=true&timeoutSeconds=2', {
      headers: { accept },
    });
    return answer.body;
  } finally {
    session.close();
  }
}

/** An approval body for an upstream CSR name (as `kubectl certificate approve` sends it). */
function approvalOf(name: string): string {
  return JSON.stringify({
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name },
    status: { conditions: [{ type: 'Approved', status: 'True', reason: 'Sneaky', message: 'approved from outside' }] },
  });
}

t.test("a tenant identity straight at the upstream cannot name the upstream's signer", async (t) => {
  const request = keyAndRequest('sneaky');
  const refused = await stack.kubectlDirect(
    [
      '--as',
      `${A}-admin`,
      '--as-group',
      `${A}:system:authenticated`,
      '--as-group',
      TENANT_CLUSTER_SCOPE_GROUP,
      '--as-user-extra',
      `tenant=${A}`,
      'create',
      '--raw',
      '/apis/certificates.k8s.io/v1/certificatesigningrequests',
      '-f',
      '-',
    ],
    { input: csrYaml(`${A}-sneaky`, request.requestPem) },
  );
  t.not(refused.code, 0);
  t.match(refused.stderr, /tenantgate: a certificate signing request of tenant csra01 names a signer of its own signer domain/);
  const otherTenant = await stack.kubectlDirect(
    [
      '--as',
      `${A}-admin`,
      '--as-group',
      `${A}:system:authenticated`,
      '--as-group',
      TENANT_CLUSTER_SCOPE_GROUP,
      '--as-user-extra',
      `tenant=${A}`,
      'create',
      '--raw',
      '/apis/certificates.k8s.io/v1/certificatesigningrequests',
      '-f',
      '-',
    ],
    { input: csrYaml(`${A}-sneaky`, request.requestPem, `${B}.tenants.tenantgate.kubezoo.io/d2.example.com.x`) },
  );
  t.match(otherTenant.stderr, /names a signer of its own signer domain/, "nor another tenant's domain");
  const approveOther = await stack.kubectlDirect(
    [
      '--as',
      `${A}-admin`,
      '--as-group',
      `${A}:system:authenticated`,
      '--as-group',
      TENANT_CLUSTER_SCOPE_GROUP,
      '--as-user-extra',
      `tenant=${A}`,
      'replace',
      '--raw',
      `/apis/certificates.k8s.io/v1/certificatesigningrequests/${B}-keep/approval`,
      '-f',
      '-',
    ],
    { input: approvalOf(`${B}-keep`) },
  );
  t.not(approveOther.code, 0, "nor approve another tenant's CSR");
  t.match(approveOther.stderr, /forbidden/i, approveOther.stderr);
});

t.test("the CSR's certificate is refused once the tenant is deleted and re-created; the tenant's CSRs go with it", async (t) => {
  t.ok(aliceKubeconfig, 'the first test made the certificate');
  await succeeded(stack.kubectl(['delete', 'tenant', A, '--wait=false']), 'delete tenant');
  const gone = await poll(async () => ((await stack.kubectl(['get', 'tenant', A])).code !== 0 ? true : undefined), { withinMs: 60_000 });
  t.ok(gone, 'the tenant is gone');
  const left = await succeeded(stack.kubectlDirect(['get', 'csr', '-l', `kubezoo.io/tenant=${A}`, '-o', 'name']), 'upstream csrs');
  t.equal(left.trim(), '', "no CSR of the tenant's is left upstream");
  await createTestTenant(stack, A);
  const refused = await stack.kubectl(['auth', 'whoami'], { kubeconfig: aliceKubeconfig });
  t.not(refused.code, 0);
  t.match(refused.stderr, /Unauthorized/, 'the old certificate does not work for the new tenant');
});
