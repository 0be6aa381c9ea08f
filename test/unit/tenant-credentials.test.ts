import { X509Certificate, randomUUID } from 'node:crypto';
import { parse } from 'yaml';
import t from 'tap';
import { RsaKeyPool } from '../../lib/auth/key-pool.ts';
import { createCertificateAuthority } from '../../lib/auth/pki.ts';
import { tenantRefusal } from '../../lib/auth/tenant-resolution.ts';
import type { Identity } from '../../lib/auth/identity.ts';
import { certificateBelongsTo, issueTenantAdminCertificate, issueTenantKubeconfig, tenantCertificateSerial } from '../../lib/tenants/credentials.ts';
import { MemoryTenantStore } from '../../lib/tenants/memory-store.ts';
import { TENANT_API_VERSION, type Tenant } from '../../lib/tenants/tenant.ts';

function tenant(name: string, uid = randomUUID()): Tenant {
  return {
    apiVersion: TENANT_API_VERSION,
    kind: 'Tenant',
    metadata: { name, uid, resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: {},
  };
}

const ca = createCertificateAuthority('test-ca');

t.test('a serial belongs to the incarnation it was made for and to no other', async (t) => {
  const first = tenant('abc123');
  const recreated = tenant('abc123');
  const other = tenant('xyz789');
  for (let i = 0; i < 200; i++) {
    const serial = tenantCertificateSerial(first);
    t.ok(certificateBelongsTo(serial, first) && certificateBelongsTo(serial.toUpperCase(), first), 'its own tenant, in either case');
    if (certificateBelongsTo(serial, recreated) || certificateBelongsTo(serial, other)) t.fail(`serial ${serial} accepted by another tenant`);
  }
  const serials = new Set(Array.from({ length: 1000 }, () => tenantCertificateSerial(first)));
  t.equal(serials.size, 1000, 'two certificates of one incarnation never share a serial');
});

t.test('serials of other shapes are refused', async (t) => {
  const owner = tenant('abc123');
  const serial = tenantCertificateSerial(owner);
  t.ok(certificateBelongsTo('00' + serial, owner), 'leading zeros as some tools print them');
  for (const wrong of [
    '',
    '0',
    serial.slice(0, -2),
    serial + '00',
    '02' + serial.slice(2),
    serial.replace(/^01/, '11'),
    '01' + randomUUID().replaceAll('-', '').slice(0, 30),
  ]) {
    t.notOk(certificateBelongsTo(wrong, owner), `refuses ${JSON.stringify(wrong)}`);
  }
});

t.test('the admin certificate is CN=<id>-admin, OU=<id>, signed by the CA, with the bound serial and the asked validity', async (t) => {
  const owner = tenant('abc123');
  const issued = await issueTenantAdminCertificate(ca, owner, { validityDays: 30 });
  const cert = new X509Certificate(issued.certPem);
  t.ok(cert.verify(new X509Certificate(ca.certPem).publicKey), 'signed by the CA');
  t.match(cert.subject, /OU=abc123/);
  t.match(cert.subject, /CN=abc123-admin/);
  t.ok(certificateBelongsTo(cert.serialNumber, owner), 'bound to the tenant');
  t.notOk(certificateBelongsTo(cert.serialNumber, tenant('abc123')), 'not to its next incarnation');
  const days = (Date.parse(cert.validTo) - Date.now()) / 86_400_000;
  t.ok(days > 29.9 && days < 30.1, `valid 30 days (${days.toFixed(2)})`);
  const defaultDays = (Date.parse(new X509Certificate((await issueTenantAdminCertificate(ca, owner)).certPem).validTo) - Date.now()) / 86_400_000;
  t.ok(defaultDays > 364.9 && defaultDays < 365.1, 'a year by default');
});

t.test('the kubeconfig carries the server, the CA and a key that matches its certificate', async (t) => {
  const pool = new RsaKeyPool(2);
  t.teardown(() => pool.close());
  await pool.filled();
  const config = parse(await issueTenantKubeconfig(ca, 'https://127.0.0.1:6443', tenant('abc123'), { keyPool: pool }));
  t.equal(config.clusters[0].cluster.server, 'https://127.0.0.1:6443/tenants/abc123', "the tenant's own URL on tenantgate");
  t.equal(Buffer.from(config.clusters[0].cluster['certificate-authority-data'], 'base64').toString(), ca.certPem);
  const cert = new X509Certificate(Buffer.from(config.users[0].user['client-certificate-data'], 'base64'));
  const { createPrivateKey } = await import('node:crypto');
  t.ok(cert.checkPrivateKey(createPrivateKey(Buffer.from(config.users[0].user['client-key-data'], 'base64'))), 'key and certificate match');
});

t.test('the key pool hands out distinct keys, refills in the background and stays bounded', async (t) => {
  const pool = new RsaKeyPool(3);
  t.teardown(() => pool.close());
  await pool.filled();
  t.equal(pool.available, 3);
  const taken = await Promise.all([pool.take(), pool.take(), pool.take(), pool.take()]);
  t.equal(new Set(taken.map((k) => k.privateKeyPem)).size, 4, 'never the same key twice, even past the pool');
  await pool.filled();
  t.equal(pool.available, 3, 'refilled to its size, not beyond');
});

t.test('issuing with a warm pool is milliseconds; without it the key generation dominates', async (t) => {
  const owner = tenant('abc123');
  const pool = new RsaKeyPool(20);
  t.teardown(() => pool.close());
  await pool.filled();
  const time = async (keyPool?: RsaKeyPool) => {
    const start = performance.now();
    for (let i = 0; i < 20; i++) await issueTenantKubeconfig(ca, 'https://127.0.0.1:6443', owner, { keyPool });
    return (performance.now() - start) / 20;
  };
  const warm = await time(pool);
  const cold = await time();
  t.comment(`tenant kubeconfig issue: ${warm.toFixed(2)} ms with a warm key pool, ${cold.toFixed(2)} ms generating the key`);
  t.ok(warm * 3 < cold, 'the pool saves the key generation');
});

t.test("resolve: a tenant identity counts only while its tenant exists, is not terminating, and its proof is this incarnation's", async (t) => {
  const store = new MemoryTenantStore();
  const created = await store.create({ apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: 'abc123' }, spec: {} });
  const bound: Identity = {
    user: 'admin',
    groups: [],
    tenant: 'abc123',
    proof: { kind: 'certificate', serial: tenantCertificateSerial(created).toUpperCase() },
  };
  t.equal(tenantRefusal(bound, store), null);
  t.equal(tenantRefusal({ user: 'ops', groups: [], tenant: null }, store), null, 'administrators are not tenants');
  t.equal(tenantRefusal({ ...bound, tenant: 'xyz789' }, store), 'no such tenant');
  t.equal(tenantRefusal({ ...bound, proof: { kind: 'certificate', serial: '01' + 'ab'.repeat(15) } }, store), 'the certificate was not issued for this tenant');
  t.equal(tenantRefusal({ ...bound, proof: undefined }, store), 'no proof of identity');
  const token: Identity = {
    user: 'system:serviceaccount:default:default',
    groups: [],
    tenant: 'abc123',
    proof: { kind: 'token', tenantUid: created.metadata.uid },
  };
  t.equal(tenantRefusal(token, store), null);
  await store.update({ ...store.get('abc123')!, metadata: { ...store.get('abc123')!.metadata, deletionTimestamp: new Date().toISOString() } });
  t.equal(tenantRefusal(bound, store), 'the tenant is being deleted');
  await store.remove('abc123');
  t.equal(tenantRefusal(bound, store), 'no such tenant');
  await store.create({ apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: 'abc123' }, spec: {} });
  t.equal(tenantRefusal(bound, store), 'the certificate was not issued for this tenant', 're-created: the old certificate is refused');
  t.equal(tenantRefusal(token, store), 'the token predates this tenant', 're-created: a token reviewed for the old one is refused');
});
