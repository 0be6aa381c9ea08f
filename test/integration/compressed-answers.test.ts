// Compressed answers, as kube-apiserver gives them to a client that sends `Accept-Encoding: gzip` (client-go does):
// gzip from 128 KiB on, reads only (never a watch), over HTTP/2 and HTTP/1.1, in JSON, protobuf, Tables and YAML.
// Two tenants with the same names: each unzips its own objects only.
import type { ClientHttp2Session } from 'node:http2';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import { connectH2, credentialsOf, h1Request, h2Request, type Answer } from '../helpers/http.ts';
import { kubectlOk } from '../helpers/kit.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';

const ALPHA = 'gzipa1';
const BRAVO = 'gzipb2';
/** 40 ConfigMaps of 4 KiB: a list of about 170 KB, past the apiserver's 128 KiB threshold. */
const LARGE = 40;
const LIST = '/api/v1/namespaces/bulk/configmaps';
const GZIP = { 'accept-encoding': 'gzip' };

let stack: Stack;
const tenants: TestTenant[] = [];
const sessions = new Map<string, ClientHttp2Session>();
let up: ClientHttp2Session;

t.before(async () => {
  stack = await startStack({ controllers: false });
  up = connectH2(credentialsOf(stack.upstreamKubeconfig));
  for (const id of [ALPHA, BRAVO]) {
    const tenant = await createTestTenant(stack, id);
    tenants.push(tenant);
    const session = connectH2(credentialsOf(tenant.kubeconfig));
    sessions.set(id, session);
    const created = await h2Request(session, 'POST', '/api/v1/namespaces', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bulk' } }),
    });
    if (created.status !== 201) throw new Error(`namespace: ${created.status} ${created.body}`);
    for (let i = 0; i < LARGE; i++) {
      const made = await h2Request(session, 'POST', LIST, {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `cm-${i}` },
          data: { owner: id, filler: `${id}-${i}-`.repeat(400).slice(0, 4096) },
        }),
      });
      if (made.status !== 201) throw new Error(`configmap: ${made.status} ${made.body}`);
    }
  }
});
t.teardown(async () => {
  for (const session of sessions.values()) session.close();
  up?.close();
  await stack?.stop();
});

/** The answer's body as the client reads it: unzipped when it says gzip. */
function unzipped(answer: Answer): Buffer {
  return answer.headers['content-encoding'] === 'gzip' ? gunzipSync(answer.bytes) : answer.bytes;
}

t.test('a large list is compressed as the apiserver compresses it, and unzips to the same answer', async (t) => {
  const direct = await h2Request(up, 'GET', `/api/v1/namespaces/${ALPHA}-bulk/configmaps`, { headers: GZIP });
  t.equal(direct.headers['content-encoding'], 'gzip', 'the apiserver compresses this list');
  for (const tenant of tenants) {
    const session = sessions.get(tenant.id)!;
    const plain = await h2Request(session, 'GET', LIST);
    t.equal(plain.headers['content-encoding'], undefined, 'not asked: not compressed');
    const expected = plain.json();
    t.equal(expected.items.length, LARGE);
    t.ok(plain.bytes.length > 128 * 1024, `past the threshold (${plain.bytes.length} bytes)`);
    for (const [protocol, answer] of [
      ['HTTP/2', await h2Request(session, 'GET', LIST, { headers: GZIP })],
      ['HTTP/1.1', await h1Request(credentialsOf(tenant.kubeconfig), 'GET', LIST, { headers: GZIP })],
    ] as const) {
      t.equal(answer.status, 200);
      t.equal(answer.headers['content-encoding'], 'gzip', `${tenant.id} over ${protocol}: compressed`);
      t.ok(answer.bytes.length * 5 < plain.bytes.length, `${protocol}: ${answer.bytes.length} bytes on the wire for ${plain.bytes.length}`);
      const list = JSON.parse(unzipped(answer).toString());
      t.same(
        list.items.map((item: any) => [item.metadata.name, item.metadata.namespace, item.data.owner]),
        expected.items.map((item: any) => [item.metadata.name, 'bulk', tenant.id]),
        `${protocol}: the tenant's own list, in its names`,
      );
    }
  }
});

t.test('a small answer, an error and a watch go uncompressed, as the apiserver sends them', async (t) => {
  const session = sessions.get(ALPHA)!;
  const one = await h2Request(session, 'GET', `${LIST}/cm-1`, { headers: GZIP });
  t.equal(one.status, 200);
  t.equal(one.headers['content-encoding'], undefined, 'one ConfigMap: under the threshold');
  t.equal(Number(one.headers['content-length']), one.bytes.length, 'sent whole, with its length');
  t.equal(one.json().data.owner, ALPHA);
  const small = await h2Request(session, 'GET', `${LIST}?limit=2`, { headers: GZIP });
  t.equal(small.headers['content-encoding'], undefined, 'a short list: under the threshold');
  t.equal(small.json().items.length, 2);
  const missing = await h2Request(session, 'GET', `${LIST}/nosuch`, { headers: GZIP });
  t.equal(missing.status, 404);
  t.equal(missing.headers['content-encoding'], undefined);
  t.equal(missing.json().reason, 'NotFound');
  const watch = await h2Request(session, 'GET', `${LIST}?watch=1&timeoutSeconds=1`, { headers: GZIP });
  t.equal(watch.status, 200);
  t.equal(watch.headers['content-encoding'], undefined, 'a watch is never compressed');
  t.equal(watch.body.trim().split('\n').length, LARGE, 'its events, one per line, as they came');
});

t.test('Tables, protobuf and YAML compress too; kubectl reads them as ever', async (t) => {
  const session = sessions.get(BRAVO)!;
  // (With each row's object: a Table of the metadata alone is small.)
  const table = await h2Request(session, 'GET', `${LIST}?includeObject=Object`, {
    headers: { ...GZIP, accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' },
  });
  t.equal(table.headers['content-encoding'], 'gzip');
  const rows = JSON.parse(unzipped(table).toString()).rows;
  t.equal(rows.length, LARGE, 'a Table of every row');
  const protobuf = await h2Request(session, 'GET', LIST, { headers: { ...GZIP, accept: 'application/vnd.kubernetes.protobuf' } });
  t.equal(protobuf.headers['content-type'], 'application/vnd.kubernetes.protobuf');
  t.equal(protobuf.headers['content-encoding'], 'gzip');
  t.ok(
    unzipped(protobuf)
      .subarray(0, 4)
      .equals(Buffer.from([0x6b, 0x38, 0x73, 0x00])),
    'protobuf inside',
  );
  t.notOk(unzipped(protobuf).includes(Buffer.from(`${ALPHA}-`)), "nothing of the other tenant's");
  const yaml = await h2Request(session, 'GET', LIST, { headers: { ...GZIP, accept: 'application/yaml' } });
  t.equal(yaml.headers['content-type'], 'application/yaml');
  t.equal(yaml.headers['content-encoding'], 'gzip');
  t.equal(parseYaml(unzipped(yaml).toString()).items.length, LARGE, 'YAML, compressed');
  const names = await kubectlOk(tenants[1]!, ['get', 'configmaps', '-n', 'bulk', '-o', 'name']);
  t.equal(names.trim().split('\n').length, LARGE, 'kubectl (which asks for gzip) lists every ConfigMap');
  const wide = await kubectlOk(tenants[1]!, ['get', 'configmaps', '-n', 'bulk']);
  t.match(wide, /cm-39\s+2\s+/, 'and prints the Table');
});
