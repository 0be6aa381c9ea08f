import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { bearerAuthorization, loadKubeconfig, renderKubeconfig } from '../../lib/upstream/kubeconfig.ts';

const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-test-'));

t.test('a kubeconfig tenantgate writes reads back the same', async (t) => {
  const credentials = { server: 'https://127.0.0.1:6443', caPem: 'CA\n', certPem: 'CERT\n', keyPem: 'KEY\n' };
  const path = join(dir, 'a.kubeconfig');
  writeFileSync(path, renderKubeconfig(credentials));
  t.same(loadKubeconfig(path), { ...credentials, token: undefined, insecureSkipTlsVerify: false });
});

t.test('YAML kubeconfigs with file references, tokens and several contexts', async (t) => {
  writeFileSync(join(dir, 'ca.crt'), 'FILE-CA');
  writeFileSync(join(dir, 'token'), 'file-token\n');
  const path = join(dir, 'b.kubeconfig');
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
current-context: second
clusters:
- name: one
  cluster: {server: https://one:6443}
- name: two
  cluster:
    server: https://two:6443
    certificate-authority: ca.crt
users:
- name: u1
  user: {token: inline-token}
- name: u2
  user: {tokenFile: token}
contexts:
- name: first
  context: {cluster: one, user: u1}
- name: second
  context: {cluster: two, user: u2}
`,
  );
  const current = loadKubeconfig(path);
  t.equal(current.server, 'https://two:6443');
  t.equal(current.caPem, 'FILE-CA', 'relative file paths resolve beside the kubeconfig');
  t.equal(bearerAuthorization(current), 'Bearer file-token', 'a token file is read (and read again as it rotates)');
  const first = loadKubeconfig(path, 'first');
  t.equal(first.server, 'https://one:6443');
  t.equal(first.token, 'inline-token');
});

t.test('a kubeconfig without a server is refused with a clear error', async (t) => {
  const path = join(dir, 'c.kubeconfig');
  writeFileSync(path, 'clusters: [{name: x, cluster: {}}]\ncontexts: [{name: x, context: {cluster: x, user: x}}]\n');
  t.throws(() => loadKubeconfig(path), /has no server/);
});
