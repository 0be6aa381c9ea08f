import t from 'tap';
import { kindOf } from '../../lib/convert/kinds.ts';
import { objectToTenant, objectToUpstream, type ConvertContext, type Json } from '../../lib/convert/rules/index.ts';
import { policyRuleToTenant, policyRuleToUpstream } from '../../lib/convert/rules/rbac.ts';
import {
  csrSignerNameToUpstream,
  signerNameProblem,
  signerNameSelectorValue,
  signerNameToTenant,
  signerNameToUpstream,
  signerResourceNameToTenant,
  signerResourceNameToUpstream,
  tenantSignerDomain,
} from '../../lib/convert/rules/signers.ts';
import { rewriteFieldSelector } from '../../lib/convert/selectors.ts';
import { stripTenantPrefixes } from '../../lib/convert/status.ts';
import { StatusError } from '../../lib/errors/status-error.ts';
import { seededRandom } from '../helpers/fuzz.ts';

const A = 'abc123';
const B = 'xyz789';
const ctx = (tenant: string): ConvertContext => ({ tenant, scopeOf: () => undefined, kindScope: () => undefined });
const CSR = kindOf('certificates.k8s.io', 'certificatesigningrequests')!;

t.test('kubernetes.io signers land in the tenant signer domain, readable and reversible', async (t) => {
  const upstream = signerNameToUpstream('kubernetes.io/kube-apiserver-client', A);
  t.equal(upstream, 'abc123.tenants.tenantgate.kubezoo.io/d2.kubernetes.io.kube-apiserver-client');
  t.equal(signerNameProblem(upstream!), null, 'the mapped name is a valid signer name for the apiserver');
  t.equal(signerNameToTenant(upstream!, A), 'kubernetes.io/kube-apiserver-client');
  t.equal(signerNameToTenant(upstream!, B), null, 'another tenant does not read it as its own');
  t.equal(signerNameToTenant('kubernetes.io/kube-apiserver-client', A), null, "the upstream's own signer is no tenant's");
  t.equal(signerNameToTenant('abc123.tenants.tenantgate.kubezoo.io.evil.com/d1.x.y', A), null, 'a longer domain is not the tenant domain');
});

t.test('the mapping is injective on tricky inputs, and every mapped name stays in the tenant domain', async (t) => {
  const tricky = [
    'a.b/c',
    'a/b.c',
    'a.b.c/d',
    'a.b/c.d',
    'd2.a/b',
    'a/d2.b',
    'a.b/d1.c',
    '/x',
    'x/',
    '/',
    'abc123.tenants.tenantgate.kubezoo.io/d2.kubernetes.io.x',
    'xyz789.tenants.tenantgate.kubezoo.io/d1.a.b',
    'example.com/e2e-abc',
    'example.com/*',
  ];
  const random = seededRandom(14);
  const alphabet = 'ad12.-/';
  for (let i = 0; i < 3000; i++) {
    const part = () => {
      let s = '';
      const length = random(8);
      for (let j = 0; j < length; j++) s += alphabet[random(alphabet.length)];
      return s;
    };
    tricky.push(i % 4 === 0 ? part() : part().replaceAll('/', '') + '/' + part().replaceAll('/', ''));
  }
  const seen = new Map<string, string>();
  for (const name of tricky) {
    const upstream = signerNameToUpstream(name, A);
    if (upstream === null) {
      t.not(name.split('/').length, 2, `${JSON.stringify(name)}: only names without exactly one "/" are left unmapped`);
      continue;
    }
    t.ok(upstream.startsWith(tenantSignerDomain(A) + '/'), `${JSON.stringify(name)} stays in the tenant domain`);
    const previous = seen.get(upstream);
    if (previous !== undefined && previous !== name) t.fail(`${JSON.stringify(name)} and ${JSON.stringify(previous)} map to the same name`);
    seen.set(upstream, name);
    if (signerNameToTenant(upstream, A) !== name) t.fail(`${JSON.stringify(name)} does not round-trip`);
    const resourceName = signerResourceNameToUpstream(name, A);
    if (signerResourceNameToTenant(resourceName, A) !== name) t.fail(`${JSON.stringify(name)} does not round-trip as an RBAC name`);
  }
  for (const name of ['a/b/c', 'nodomain', '', 'raw:x']) {
    const resourceName = signerResourceNameToUpstream(name, A);
    t.ok(resourceName.startsWith(tenantSignerDomain(A) + '/'), `RBAC name ${JSON.stringify(name)} stays in the tenant domain`);
    t.equal(signerResourceNameToTenant(resourceName, A), name);
    t.equal(signerNameToTenant(resourceName, A), null, 'and is no CSR signer');
  }
  t.ok(seen.size > 1000, `${seen.size} distinct names mapped`);
});

t.test('validation as the apiserver does it, and a 422 in the tenant terms when the mapped name cannot fit', async (t) => {
  for (const bad of ['', 'nodomain', 'a/b/c', 'example/x', 'Example.com/x', 'example.com/x_y', 'example.com/', '-a.com/x', `${'a'.repeat(64)}.com/x`]) {
    t.not(signerNameProblem(bad), null, `${JSON.stringify(bad)} is invalid`);
    t.throws(() => csrSignerNameToUpstream(bad, 'req', A), { code: 422 });
  }
  t.equal(signerNameProblem('example.com/a.b-c'), null);
  const refusal = (() => {
    try {
      csrSignerNameToUpstream('kubernetes.io/legacy-unknown', 'req', A);
    } catch (error) {
      return error as StatusError;
    }
  })();
  t.equal(refusal?.code, 422);
  t.match(refusal?.message, /legacy signerName is not allowed/);
  // The longest path the apiserver takes (317) fits for the tenant only if the domain's count and labels still fit.
  const longPath = `${'p'.repeat(253)}.${'q'.repeat(63)}`;
  t.equal(signerNameProblem(`example.com/${longPath}`), null, 'valid for a real cluster');
  let tooLong: StatusError | undefined;
  try {
    csrSignerNameToUpstream(`example.com/${longPath}`, 'req', A);
  } catch (error) {
    tooLong = error as StatusError;
  }
  t.equal(tooLong?.code, 422, 'too long once mapped: 422');
  t.match(tooLong?.message, /CertificateSigningRequest.certificates.k8s.io "req" is invalid: spec.signerName: Too long/);
  t.notMatch(tooLong?.message, /tenants\.tenantgate/, 'said in the tenant terms');
  const fits = csrSignerNameToUpstream(`example.com/${'p'.repeat(200)}`, 'req', A);
  t.equal(signerNameProblem(fits), null, 'what fits is valid upstream');
});

t.test('a CSR both ways: signer mapped, requester shown as the tenant user, other tenants see nothing', async (t) => {
  const sent: Json = {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name: 'alice' },
    spec: { request: 'eA==', signerName: 'kubernetes.io/kube-apiserver-client', usages: ['client auth'] },
  };
  const up = objectToUpstream(structuredClone(sent), ctx(A), CSR) as any;
  t.equal(up.metadata.name, 'abc123-alice');
  t.equal(up.metadata.labels['kubezoo.io/tenant'], A);
  t.equal(up.spec.signerName, 'abc123.tenants.tenantgate.kubezoo.io/d2.kubernetes.io.kube-apiserver-client');
  // What the apiserver records about the requester.
  up.spec.username = 'abc123-admin';
  up.spec.groups = ['abc123:system:authenticated', 'system:authenticated'];
  up.spec.extra = { tenant: [A] };
  const back = objectToTenant(structuredClone(up), ctx(A), CSR) as any;
  t.equal(back.metadata.name, 'alice');
  t.equal(back.spec.signerName, 'kubernetes.io/kube-apiserver-client');
  t.equal(back.spec.username, 'admin');
  t.same(back.spec.groups, ['system:authenticated']);
  t.same(back.spec.extra, {});
  t.equal(objectToTenant(structuredClone(up), ctx(B), CSR), null, "tenant B never sees A's CSR");
  const outside = structuredClone(up);
  outside.spec.signerName = 'kubernetes.io/kube-apiserver-client';
  t.equal(objectToTenant(outside, ctx(A), CSR), null, 'a CSR in the prefix but for an upstream signer is not the tenant view');
});

t.test('field selectors on spec.signerName and RBAC rules on signers are mapped into the tenant domain', async (t) => {
  const fields = { 'spec.signerName': (name: string) => signerNameSelectorValue(name, A) };
  t.equal(
    rewriteFieldSelector('spec.signerName=example.com/e2e-1,metadata.name=x', A, {
      clusterScoped: true,
      resource: 'certificatesigningrequests',
      mappedFields: fields,
    }),
    'spec.signerName=abc123.tenants.tenantgate.kubezoo.io/d2.example.com.e2e-1,metadata.name=abc123-x',
  );
  t.equal(
    rewriteFieldSelector('spec.signerName!=nonsense', A, { clusterScoped: true, resource: 'certificatesigningrequests', mappedFields: fields }),
    'spec.signerName!=abc123.tenants.tenantgate.kubezoo.io/-',
  );
  const rule: Json = {
    apiGroups: ['certificates.k8s.io'],
    resources: ['signers'],
    verbs: ['approve'],
    resourceNames: ['kubernetes.io/kube-apiserver-client', 'example.com/*'],
  };
  policyRuleToUpstream(rule, ctx(A));
  t.same(rule.resourceNames, [
    'abc123.tenants.tenantgate.kubezoo.io/d2.kubernetes.io.kube-apiserver-client',
    'abc123.tenants.tenantgate.kubezoo.io/d2.example.com.*',
  ]);
  policyRuleToTenant(rule, ctx(A));
  t.same(rule.resourceNames, ['kubernetes.io/kube-apiserver-client', 'example.com/*'], 'and back');
});

t.test('admission messages and Table cells name the tenant signer as the tenant wrote it', async (t) => {
  const upstream = signerNameToUpstream('example.com/e2e-x', A)!;
  t.equal(
    stripTenantPrefixes(
      `certificatesigningrequests.certificates.k8s.io "abc123-req" is forbidden: user not permitted to approve requests with signerName "${upstream}"`,
      A,
    ),
    'certificatesigningrequests.certificates.k8s.io "req" is forbidden: user not permitted to approve requests with signerName "example.com/e2e-x"',
  );
  t.equal(stripTenantPrefixes(upstream, A), 'example.com/e2e-x', 'a Table cell');
  t.equal(stripTenantPrefixes(signerNameToUpstream('abc123-x.com/y', A)!, A), 'abc123-x.com/y', 'a signer name is never stripped of what looks like a prefix');
  const other = signerNameToUpstream('example.com/e2e-x', B)!;
  t.equal(stripTenantPrefixes(other, A), other, "another tenant's signer is not rewritten into A's names");
});
