// Issue 18: a client that prefers protobuf (client-go's controllers) gets protobuf back — objects, lists, watches and
// Status errors converted on the wire, writes' answers, lists merged across namespaces, and what tenantgate answers
// itself — the same tenant view the JSON answer gives, never another tenant's objects though both tenants use the same
// names, over HTTP/2, HTTP/1.1 and HTTP/1.1 with an Upgrade header alike.
import type { ClientHttp2Session } from 'node:http2';
import t from 'tap';
import { connectH2, credentialsOf, h1Request, h2Request, type Answer } from '../helpers/http.ts';
import {
  decodeBody,
  decodeMessage,
  decodeWatchFrames,
  encodeBody,
  goModuleCache,
  loadProtoMessages,
  protoFields,
  type ProtoMessages,
} from '../helpers/k8s-proto.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { sleep, waitFor } from '../helpers/watch.ts';
import { succeeded } from '../helpers/kit.ts';

type Json = Record<string, any>;

const PROTOBUF = 'application/vnd.kubernetes.protobuf';
/** What client-go sends with ContentType protobuf. */
const ACCEPT_PROTOBUF = { accept: `${PROTOBUF}, application/json` };
const CORE = 'k8s.io.api.core.v1';
const STATUS = 'k8s.io.apimachinery.pkg.apis.meta.v1.Status';
const IDS = ['pbana1', 'pbanb2'] as const;
/** ConfigMaps of IDS[0] in its namespace `big`: more than a protobuf merge across namespaces holds (4 MiB). */
const BIG = { count: 6, bytes: 900 * 1024 };

type Protocol = 'HTTP/2' | 'HTTP/1.1' | 'HTTP/1.1 with Upgrade';
const PROTOCOLS: readonly Protocol[] = ['HTTP/2', 'HTTP/1.1', 'HTTP/1.1 with Upgrade'];

let stack: Stack;
let messages: ProtoMessages;
const tenants = new Map<string, TestTenant>();
const sessions = new Map<string, ClientHttp2Session>();

t.before(async () => {
  const moduleCache = goModuleCache();
  if (moduleCache === undefined) throw new Error('the Go module cache of the rig is missing: npm run rig');
  messages = loadProtoMessages(moduleCache);
  stack = await startStack({ controllers: true });
  for (const id of IDS) {
    const tenant = await createTestTenant(stack, id);
    tenants.set(id, tenant);
    sessions.set(id, connectH2(credentialsOf(tenant.kubeconfig)));
    await succeeded(tenant.kubectl(['create', 'namespace', 'app']), 'namespace');
    for (const namespace of ['default', 'app'])
      await succeeded(tenant.kubectl(['create', 'configmap', 'shared', '-n', namespace, `--from-literal=owner=${id}`]), 'configmap');
    await succeeded(tenant.kubectl(['create', 'configmap', `only-${id}`, '-n', 'default']), 'configmap');
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', labels: { app: 'web' } },
      spec: {
        affinity: {
          podAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'zone', namespaces: ['app'], labelSelector: { matchLabels: { app: 'web' } } }],
          },
        },
        containers: [{ name: 'web', image: 'registry.k8s.io/pause:3.10' }],
      },
    };
    await succeeded(tenant.kubectl(['apply', '-n', 'default', '-f', '-'], { input: JSON.stringify(pod) }), 'pod');
  }
  const big = tenants.get(IDS[0])!;
  await succeeded(big.kubectl(['create', 'namespace', 'big']), 'namespace');
  for (let i = 0; i < BIG.count; i++) {
    const configMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `big-${i}`, namespace: 'big' },
      data: { owner: IDS[0], filler: String(i).repeat(BIG.bytes) },
    };
    const created = await h2Request(sessions.get(IDS[0])!, 'POST', '/api/v1/namespaces/big/configmaps', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(configMap),
    });
    if (created.status !== 201) throw new Error(`big-${i}: ${created.status} ${created.body.slice(0, 300)}`);
  }
});
t.teardown(async () => {
  for (const session of sessions.values()) session.close();
  await stack?.stop();
});

/** A request as `id` over `protocol` (an Upgrade header on HTTP/1.1 is answered as the plain request). */
function send(
  protocol: Protocol,
  id: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<Answer> {
  if (protocol === 'HTTP/2') return h2Request(sessions.get(id)!, method, path, options);
  const headers = protocol === 'HTTP/1.1' ? options.headers : { ...options.headers, connection: 'Upgrade', upgrade: 'websocket' };
  return h1Request(credentialsOf(tenants.get(id)!.kubeconfig), method, path, { ...options, headers });
}

function isProtobufAnswer(answer: Answer): boolean {
  return String(answer.headers['content-type'] ?? '').startsWith(PROTOBUF);
}

/** The kind an answer's envelope names. */
function envelopeKind(body: Buffer): string {
  const typeMeta = protoFields(body.subarray(4)).find((field) => field.number === 1)?.value as Buffer;
  return (protoFields(typeMeta).find((field) => field.number === 2)?.value as Buffer | undefined)?.toString() ?? '';
}

/**
 * A protobuf list decoded: its metadata and items (each decoded as `itemType`); fields a list does not have (the
 * padding of a streamed list) are skipped, as client-go skips them.
 */
function decodeList(body: Buffer, itemType: string): { kind: string; metadata: Json; items: Json[] } {
  if (!body.subarray(0, 4).equals(Buffer.from('k8s\0', 'latin1'))) throw new Error(`not protobuf: ${body.subarray(0, 200).toString()}`);
  const raw = protoFields(body.subarray(4)).find((field) => field.number === 2)?.value as Buffer;
  const fields = protoFields(raw);
  const meta = fields.find((field) => field.number === 1)?.value as Buffer | undefined;
  return {
    kind: envelopeKind(body),
    metadata: meta === undefined ? {} : decodeMessage(messages, 'k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta', meta),
    items: fields.filter((field) => field.number === 2).map((field) => decodeMessage(messages, itemType, field.value as Buffer)),
  };
}

/**
 * An object as both encodings can say it: without managed fields (their times) and without empty values (protobuf
 * writes a field's zero value, JSON omits it).
 */
function comparable(value: unknown): unknown {
  if (Array.isArray(value)) return value.length === 0 ? undefined : value.map(comparable);
  // (A time JSON leaves null is protobuf's zero time.)
  if (value === null || typeof value !== 'object')
    return value === '' || value === 0 || value === false || value === null || value === '1970-01-01T00:00:00Z' ? undefined : value;
  const out: Json = {};
  for (const [key, member] of Object.entries(value)) {
    if (key === 'managedFields' || key === 'apiVersion' || key === 'kind') continue;
    const kept = comparable(member);
    if (kept !== undefined) out[key] = kept;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}

for (const id of IDS) {
  const other = IDS.find((x) => x !== id)!;

  t.test(`${id}: a ConfigMap and a Pod in protobuf are the tenant's view the JSON answer gives`, async (t) => {
    const session = sessions.get(id)!;
    for (const [path, type] of [
      ['/api/v1/namespaces/default/configmaps/shared', `${CORE}.ConfigMap`],
      ['/api/v1/namespaces/default/pods/web', `${CORE}.Pod`],
    ] as const) {
      const protobuf = await h2Request(session, 'GET', path, { headers: ACCEPT_PROTOBUF });
      t.equal(protobuf.status, 200, `GET ${path}`);
      t.match(String(protobuf.headers['content-type']), /^application\/vnd\.kubernetes\.protobuf/, 'answered in protobuf');
      t.notOk(protobuf.bytes.includes(`${id}-`), 'no upstream name in the bytes');
      const decoded = decodeBody(messages, type, protobuf.bytes);
      const json = (await h2Request(session, 'GET', path)).json();
      t.same(comparable(decoded), comparable(json), `${path}: as the JSON answer`);
    }
  });

  for (const protocol of PROTOCOLS) {
    t.test(`${id}: lists in protobuf, in one namespace and merged across namespaces, hold only the tenant's objects (${protocol})`, async (t) => {
      for (const [path, itemType] of [
        ['/api/v1/namespaces/default/configmaps', `${CORE}.ConfigMap`],
        ['/api/v1/configmaps', `${CORE}.ConfigMap`],
        ['/api/v1/serviceaccounts', `${CORE}.ServiceAccount`],
        ['/api/v1/pods', `${CORE}.Pod`],
      ] as const) {
        const protobuf = await send(protocol, id, 'GET', path, { headers: ACCEPT_PROTOBUF });
        t.equal(protobuf.status, 200, `GET ${path}`);
        t.ok(isProtobufAnswer(protobuf), `${path}: answered in protobuf (${protobuf.headers['content-type']})`);
        const json = (await h2Request(sessions.get(id)!, 'GET', path)).json();
        const list = decodeList(protobuf.bytes, itemType);
        t.equal(list.kind, `${itemType.split('.').at(-1)}List`, 'the kind of the list');
        t.match(list.metadata.resourceVersion, /^[0-9]+$/, 'a resourceVersion');
        const names = list.items.map((item) => `${item.metadata.namespace}/${item.metadata.name}`).sort();
        t.same(names, (json.items as Json[]).map((item) => `${item.metadata.namespace}/${item.metadata.name}`).sort(), `${path}: the items of the JSON answer`);
        t.notOk(names.includes(`default/only-${other}`), `never ${other}'s`);
        t.ok(
          list.items.every((item) => item.data?.owner === undefined || item.data.owner === id),
          `only ${id}'s data`,
        );
        t.notOk(protobuf.bytes.includes(other), `no byte of ${other}'s id`);
        t.notOk(protobuf.bytes.includes(`${id}-`), 'no upstream name');
      }
    });
  }

  t.test(`${id}: a merged list in pages of two follows tenantgate's continue tokens, in protobuf`, async (t) => {
    const all = (await h2Request(sessions.get(id)!, 'GET', '/api/v1/configmaps')).json();
    const names: string[] = [];
    let token = '';
    for (let page = 0; page < 50; page++) {
      const answer = await h2Request(sessions.get(id)!, 'GET', `/api/v1/configmaps?limit=2${token === '' ? '' : `&continue=${encodeURIComponent(token)}`}`, {
        headers: ACCEPT_PROTOBUF,
      });
      t.equal(answer.status, 200, `page ${page}`);
      const list = decodeList(answer.bytes, `${CORE}.ConfigMap`);
      t.ok(list.items.length <= 2, 'no page over the limit');
      names.push(...list.items.map((item) => `${item.metadata.namespace}/${item.metadata.name}`));
      token = list.metadata.continue ?? '';
      if (token === '') break;
    }
    t.same(
      names.sort(),
      (all.items as Json[]).map((item) => `${item.metadata.namespace}/${item.metadata.name}`).sort(),
      'every configmap once, as the JSON list',
    );
  });
  t.test(`${id}: a Status in protobuf names what the tenant asked for`, async (t) => {
    const session = sessions.get(id)!;
    const missing = await h2Request(session, 'GET', '/api/v1/namespaces/default/configmaps/absent', { headers: ACCEPT_PROTOBUF });
    t.equal(missing.status, 404);
    t.match(String(missing.headers['content-type']), /^application\/vnd\.kubernetes\.protobuf/);
    const status: Json = decodeBody(messages, 'k8s.io.apimachinery.pkg.apis.meta.v1.Status', missing.bytes);
    t.equal(status.message, 'configmaps "absent" not found');
    t.notOk(missing.bytes.includes(`${id}-`), 'no upstream name');
    const theirs = await h2Request(session, 'GET', `/api/v1/namespaces/${other}-default/configmaps/shared`, { headers: ACCEPT_PROTOBUF });
    t.ok(theirs.status === 403 || theirs.status === 404, `${other}'s namespace by its upstream name: ${theirs.status}`);
  });

  t.test(`${id}: a watch in protobuf streams the tenant's events only`, async (t) => {
    const session = sessions.get(id)!;
    const list: Json = decodeBody(
      messages,
      `${CORE}.ConfigMapList`,
      (await h2Request(session, 'GET', '/api/v1/namespaces/app/configmaps', { headers: ACCEPT_PROTOBUF })).bytes,
    );
    const stream = session.request({
      ':path': `/api/v1/namespaces/app/configmaps?watch=true&resourceVersion=${list.metadata.resourceVersion}`,
      ...ACCEPT_PROTOBUF,
    });
    const chunks: Buffer[] = [];
    let contentType = '';
    stream.on('response', (headers) => (contentType = String(headers['content-type'])));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    await sleep(300);
    for (const tenant of IDS)
      await succeeded(
        tenants
          .get(tenant)!
          .kubectl([
            'patch',
            'configmap',
            'shared',
            '-n',
            'app',
            '--type=merge',
            '-p',
            JSON.stringify({ data: { step: `${tenant === id ? 'own' : 'other'}-${IDS.indexOf(id)}` } }),
          ]),
        'patch',
      );
    await succeeded(tenants.get(id)!.kubectl(['create', 'configmap', `watched-${id}`, '-n', 'app']), 'create');
    const events = () => decodeWatchFrames(messages, `${CORE}.ConfigMap`, Buffer.concat(chunks)) as { type: string; object: Json }[];
    await waitFor('the create event', () => events().some((e) => e.object.metadata?.name === `watched-${id}`), 15_000);
    stream.close();
    t.match(contentType, /^application\/vnd\.kubernetes\.protobuf;stream=watch/);
    const seen = events().map((e) => `${e.type} ${e.object.metadata.namespace}/${e.object.metadata.name} ${e.object.data?.step ?? ''}`);
    t.same(seen, [`MODIFIED app/shared own-${IDS.indexOf(id)}`, `ADDED app/watched-${id} `], `${id} sees its own events, under its names, in order`);
    t.notOk(Buffer.concat(chunks).includes(other), `no byte of ${other}'s`);
  });

  for (const protocol of PROTOCOLS.filter((p) => p !== 'HTTP/2')) {
    t.test(`${id}: a watch in protobuf streams the tenant's events only (${protocol})`, async (t) => {
      const slug = protocol === 'HTTP/1.1' ? 'h1' : 'h1up';
      const list: Json = decodeBody(
        messages,
        `${CORE}.ConfigMapList`,
        (await send(protocol, id, 'GET', '/api/v1/namespaces/app/configmaps', { headers: ACCEPT_PROTOBUF })).bytes,
      );
      // The watch ends by its timeout: the whole stream is the answer.
      const watched = send(
        protocol,
        id,
        'GET',
        `/api/v1/namespaces/app/configmaps?watch=true&timeoutSeconds=8&resourceVersion=${list.metadata.resourceVersion}`,
        { headers: ACCEPT_PROTOBUF },
      );
      await sleep(300);
      for (const tenant of IDS)
        await succeeded(
          tenants
            .get(tenant)!
            .kubectl([
              'patch',
              'configmap',
              'shared',
              '-n',
              'app',
              '--type=merge',
              '-p',
              JSON.stringify({ data: { step: `${tenant === id ? 'own' : 'other'}-${slug}-${IDS.indexOf(id)}` } }),
            ]),
          'patch',
        );
      await succeeded(tenants.get(id)!.kubectl(['create', 'configmap', `watched-${id}-${slug}`, '-n', 'app']), 'create');
      const answer = await watched;
      t.equal(answer.status, 200);
      t.match(answer.headers['content-type'], /^application\/vnd\.kubernetes\.protobuf;stream=watch/);
      const seen = (decodeWatchFrames(messages, `${CORE}.ConfigMap`, answer.bytes) as { type: string; object: Json }[]).map(
        (e) => `${e.type} ${e.object.metadata.namespace}/${e.object.metadata.name} ${e.object.data?.step ?? ''}`,
      );
      t.same(
        seen,
        [`MODIFIED app/shared own-${slug}-${IDS.indexOf(id)}`, `ADDED app/watched-${id}-${slug} `],
        `${id} sees its own events, under its names, in order`,
      );
      t.notOk(answer.bytes.includes(other), `no byte of ${other}'s`);
    });
  }
}

for (const id of IDS) {
  const other = IDS.find((x) => x !== id)!;

  for (const protocol of ['HTTP/2', 'HTTP/1.1'] as const) {
    t.test(`${id}: writes are answered in protobuf, the tenant's view the JSON answer gives (${protocol})`, async (t) => {
      const name = `written-${protocol === 'HTTP/2' ? 'h2' : 'h1'}`;
      const path = `/api/v1/namespaces/default/configmaps/${name}`;
      const asJson = async (objectPath: string) => (await h2Request(sessions.get(id)!, 'GET', objectPath)).json();
      /** The answer is protobuf of `type`, the tenant's own, and the object the JSON get shows right after. */
      const check = async (what: string, answer: Answer, status: number, type: string, objectPath: string) => {
        t.equal(answer.status, status, `${what}: ${answer.status} ${isProtobufAnswer(answer) ? '' : answer.body.slice(0, 300)}`);
        t.ok(isProtobufAnswer(answer), `${what}: answered in protobuf`);
        t.notOk(answer.bytes.includes(`${id}-`), `${what}: no upstream name`);
        t.notOk(answer.bytes.includes(other), `${what}: no byte of ${other}'s`);
        const decoded: Json = decodeBody(messages, type, answer.bytes);
        t.same(comparable(decoded), comparable(await asJson(objectPath)), `${what}: as the JSON answer`);
        return decoded;
      };
      const body = (object: Json) => encodeBody(messages, `${CORE}.ConfigMap`, { apiVersion: 'v1', kind: 'ConfigMap', ...object });
      const protobufBody = { ...ACCEPT_PROTOBUF, 'content-type': PROTOBUF };

      const created = await send(protocol, id, 'POST', '/api/v1/namespaces/default/configmaps', {
        headers: protobufBody,
        body: body({ metadata: { name }, data: { owner: id } }),
      });
      const made = await check('create', created, 201, `${CORE}.ConfigMap`, path);
      t.match(made, { metadata: { name, namespace: 'default' }, data: { owner: id } });

      const updated = await send(protocol, id, 'PUT', path, {
        headers: protobufBody,
        body: body({ metadata: { name, resourceVersion: made.metadata.resourceVersion }, data: { owner: id, step: 'updated' } }),
      });
      t.match(await check('update', updated, 200, `${CORE}.ConfigMap`, path), { data: { step: 'updated' } });

      const patched = await send(protocol, id, 'PATCH', path, {
        headers: { ...ACCEPT_PROTOBUF, 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify({ data: { step: 'patched' } }),
      });
      t.match(await check('patch', patched, 200, `${CORE}.ConfigMap`, path), { data: { step: 'patched' } });

      // A subresource answered with the whole object: the pod's status.
      const condition = { type: `Checked${protocol === 'HTTP/2' ? 'H2' : 'H1'}`, status: 'True', message: `checked by ${id}` };
      const podPath = '/api/v1/namespaces/default/pods/web';
      const status = await send(protocol, id, 'PATCH', `${podPath}/status`, {
        headers: { ...ACCEPT_PROTOBUF, 'content-type': 'application/strategic-merge-patch+json' },
        body: JSON.stringify({ status: { conditions: [condition] } }),
      });
      const pod = await check('status patch', status, 200, `${CORE}.Pod`, podPath);
      t.ok(
        (pod.status.conditions as Json[]).some((c) => c.type === condition.type),
        'the condition written',
      );

      const deleted = await send(protocol, id, 'DELETE', path, { headers: ACCEPT_PROTOBUF });
      t.equal(deleted.status, 200, 'delete');
      t.ok(isProtobufAnswer(deleted), 'delete: answered in protobuf');
      const kind = envelopeKind(deleted.bytes);
      const gone = decodeBody(messages, kind === 'Status' ? STATUS : `${CORE}.ConfigMap`, deleted.bytes);
      t.match(
        gone,
        kind === 'Status' ? { status: 'Success', details: { name } } : { metadata: { name, namespace: 'default' }, data: { owner: id } },
        `delete: the ${kind} of the tenant's view`,
      );
      t.notOk(deleted.bytes.includes(`${id}-`), 'delete: no upstream name');

      // A namespace answered in protobuf is the tenant's to use at once (its rights are in place before the answer).
      const namespace = `made-${protocol === 'HTTP/2' ? 'h2' : 'h1'}`;
      const namespaceMade = await send(protocol, id, 'POST', '/api/v1/namespaces', {
        headers: protobufBody,
        body: encodeBody(messages, `${CORE}.Namespace`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }),
      });
      t.match(await check('namespace create', namespaceMade, 201, `${CORE}.Namespace`, `/api/v1/namespaces/${namespace}`), { metadata: { name: namespace } });
      const inIt = await send(protocol, id, 'POST', `/api/v1/namespaces/${namespace}/configmaps`, {
        headers: protobufBody,
        body: body({ metadata: { name: 'first' } }),
      });
      t.equal(inIt.status, 201, 'a configmap in it right after');

      const again = await send(protocol, id, 'DELETE', path, { headers: ACCEPT_PROTOBUF });
      t.equal(again.status, 404, 'deleted again: not found');
      t.ok(isProtobufAnswer(again), 'the Status in protobuf');
      t.match(decodeBody(messages, STATUS, again.bytes), { reason: 'NotFound', message: `configmaps "${name}" not found`, code: 404 });
    });
  }

  for (const protocol of PROTOCOLS) {
    t.test(`${id}: a namespace the tenant lacks, asked in protobuf: the 404 and the empty list a cluster gives (${protocol})`, async (t) => {
      for (const namespace of ['nowhere', `${other}-default`]) {
        const missing = await send(protocol, id, 'GET', `/api/v1/namespaces/${namespace}/configmaps/shared`, { headers: ACCEPT_PROTOBUF });
        t.equal(missing.status, 404, `${namespace}: a get is not found`);
        t.ok(isProtobufAnswer(missing), `${namespace}: the Status in protobuf (${missing.headers['content-type']})`);
        t.match(decodeBody(messages, STATUS, missing.bytes), { kind: 'Status', reason: 'NotFound', message: 'configmaps "shared" not found', code: 404 });
        t.notOk(missing.bytes.includes(`${id}-${namespace}`), 'no upstream name');

        const list = await send(protocol, id, 'GET', `/api/v1/namespaces/${namespace}/configmaps`, { headers: ACCEPT_PROTOBUF });
        t.equal(list.status, 200, `${namespace}: a list is empty`);
        t.ok(isProtobufAnswer(list), `${namespace}: the list in protobuf (${list.headers['content-type']})`);
        const decoded = decodeList(list.bytes, `${CORE}.ConfigMap`);
        t.equal(decoded.kind, 'ConfigMapList');
        t.same(decoded.items, [], 'no items');
        t.match(decoded.metadata.resourceVersion, /^[0-9]+$/, "the current resourceVersion, as the apiserver's own empty list");
      }
      const json = await send(protocol, id, 'GET', '/api/v1/namespaces/nowhere/configmaps');
      t.match(json.json(), { kind: 'ConfigMapList', items: [], metadata: { resourceVersion: /^[0-9]+$/ } }, 'in JSON too');
    });

    t.test(`${id}: a refusal tenantgate makes itself comes in protobuf to a protobuf client (${protocol})`, async (t) => {
      // A cluster-scoped name too long for the tenant's prefix: tenantgate refuses the create before any upstream call (and a write
      // that carries an Upgrade header is refused before that).
      const path = '/apis/rbac.authorization.k8s.io/v1/clusterroles';
      const body = JSON.stringify({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'x'.repeat(250) }, rules: [] });
      const expected = protocol === 'HTTP/1.1 with Upgrade' ? 400 : 422;
      const refused = await send(protocol, id, 'POST', path, { headers: { ...ACCEPT_PROTOBUF, 'content-type': 'application/json' }, body });
      t.equal(refused.status, expected, refused.body.slice(0, 300));
      t.ok(isProtobufAnswer(refused), 'in protobuf');
      t.match(decodeBody(messages, STATUS, refused.bytes), { kind: 'Status', status: 'Failure', code: expected, message: /./ });
      t.notOk(refused.bytes.includes(`${id}-`), 'no upstream name');
      const json = await send(protocol, id, 'POST', path, { headers: { 'content-type': 'application/json' }, body });
      t.match(json.json(), { kind: 'Status', code: expected }, 'in JSON to a JSON client');
    });
  }
}

t.test(`${IDS[0]}: a merged list larger than a protobuf merge holds is written whole, item by item; ${IDS[1]} sees none of it`, async (t) => {
  for (const query of ['', '?limit=4']) {
    const names: string[] = [];
    let token = '';
    for (let page = 0; page < 20; page++) {
      const path = `/api/v1/configmaps${query}${token === '' ? '' : `&continue=${encodeURIComponent(token)}`}`;
      const answer = await h2Request(sessions.get(IDS[0])!, 'GET', path, { headers: ACCEPT_PROTOBUF });
      t.equal(answer.status, 200, path);
      t.ok(isProtobufAnswer(answer), 'in protobuf');
      const list = decodeList(answer.bytes, `${CORE}.ConfigMap`);
      for (const item of list.items) {
        names.push(`${item.metadata.namespace}/${item.metadata.name}`);
        if (item.metadata.name.startsWith('big-')) t.equal(item.data.filler.length, BIG.bytes, `${item.metadata.name}: whole`);
      }
      token = list.metadata.continue ?? '';
      if (token === '') break;
    }
    const json = (await h2Request(sessions.get(IDS[0])!, 'GET', '/api/v1/configmaps')).json();
    t.same(
      names.sort(),
      (json.items as Json[]).map((item) => `${item.metadata.namespace}/${item.metadata.name}`).sort(),
      `${query || 'one list'}: the items of the JSON answer`,
    );
    t.equal(names.filter((name) => name.startsWith('big/big-')).length, BIG.count, 'every big configmap');
  }
  const theirs = await h2Request(sessions.get(IDS[1])!, 'GET', '/api/v1/configmaps', { headers: ACCEPT_PROTOBUF });
  const list = decodeList(theirs.bytes, `${CORE}.ConfigMap`);
  t.notOk(
    list.items.some((item) => item.metadata.namespace === 'big'),
    `${IDS[1]} lists none of ${IDS[0]}'s`,
  );
  t.notOk(theirs.bytes.includes(IDS[0]), `no byte of ${IDS[0]}'s`);
});

t.test('a Table, or JSON first, is not answered in protobuf', async (t) => {
  const session = sessions.get(IDS[0])!;
  const table = await h2Request(session, 'GET', '/api/v1/namespaces/default/configmaps', {
    headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' },
  });
  t.equal(table.json().kind, 'Table');
  const json = await h2Request(session, 'GET', '/api/v1/namespaces/default/configmaps', { headers: { accept: `application/json, ${PROTOBUF}` } });
  t.equal(json.json().kind, 'ConfigMapList', 'JSON first: JSON');
});
