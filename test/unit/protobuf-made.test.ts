// The protobuf answers tenantgate makes itself (lib/convert/protobuf/made.ts): Status errors and empty lists as the
// .proto files read them, and an upstream list page read item by item, in any pieces, to the tenant's items only.
import t from 'tap';
import { kindOf } from '../../lib/convert/kinds.ts';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';
import { listMetaField, protobufEmptyList, protobufListHead, protobufStatus, ProtobufListPage, type ConvertedItem } from '../../lib/convert/protobuf/made.ts';
import type { ConvertContext } from '../../lib/convert/rules/index.ts';
import { forbidden, notFound, tooManyRequests } from '../../lib/errors/status-error.ts';
import {
  decodeBody,
  decodeMessage,
  encodeBody,
  encodeMessage,
  goModuleCache,
  loadProtoMessages,
  protoField,
  type ProtoMessages,
} from '../helpers/k8s-proto.ts';

const moduleCache = goModuleCache();
const NEEDS_PROTO = {
  skip: moduleCache === undefined ? 'the Go module cache with k8s.io/api v0.36.3 is not on this machine: build the rig first (npm run rig)' : false,
};
const messages: ProtoMessages = moduleCache === undefined ? new Map() : loadProtoMessages(moduleCache);

const STATUS = 'k8s.io.apimachinery.pkg.apis.meta.v1.Status';
const CONFIG_MAP = 'k8s.io.api.core.v1.ConfigMap';
const tenant = 'abc123';
const ctx: ConvertContext = { tenant } as ConvertContext;
const configMaps = kindOf('', 'configmaps')!;

t.test('a Status tenantgate makes decodes as the Status the JSON answer says', NEEDS_PROTO, async (t) => {
  for (const error of [
    notFound('configmaps "x" not found', { name: 'x', kind: 'configmaps' }),
    forbidden('nodes is forbidden: read-only', { group: '', kind: 'nodes' }),
    tooManyRequests('too many requests', 3),
  ]) {
    const json = error.toJSON() as Record<string, any>;
    const decoded = decodeBody(messages, STATUS, protobufStatus(json));
    t.same({ ...decoded, metadata: json.metadata }, json, error.message);
  }
});

t.test('an empty list carries its kind and metadata', NEEDS_PROTO, async (t) => {
  const body = protobufEmptyList('apps/v1', 'DeploymentList', { resourceVersion: '42' });
  t.same(decodeBody(messages, 'k8s.io.api.apps.v1.DeploymentList', body), {
    apiVersion: 'apps/v1',
    kind: 'DeploymentList',
    metadata: { resourceVersion: '42' },
  });
  const head = protobufListHead('v1', 'ConfigMapList', 300);
  t.same(head.subarray(head.length - 3), Buffer.from([0x12, 0xac, 0x02]), 'raw = 2 declared with the length given (300)');
  t.same(decodeMessage(messages, 'k8s.io.api.core.v1.ConfigMapList', listMetaField({ resourceVersion: '7', continue: 'token' })), {
    metadata: { resourceVersion: '7', continue: 'token' },
  });
});

/** An upstream ConfigMapList: the tenant's configmaps, one of another tenant's, one without the tenant label. */
function upstreamPage(): Buffer {
  const item = (namespace: string, name: string, owner: string | null) =>
    protoField(
      2,
      encodeMessage(messages, CONFIG_MAP, {
        metadata: { name, namespace, ...(owner === null ? {} : { labels: { [TENANT_LABEL]: owner, app: 'x' } }) },
        data: { key: name },
      }),
    );
  const list = Buffer.concat([
    protoField(1, encodeMessage(messages, 'k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta', { resourceVersion: '99', continue: 'next' })),
    item(`${tenant}-default`, 'a', tenant),
    item('zzzzzz-default', 'theirs', 'zzzzzz'),
    item(`${tenant}-app`, 'b', tenant),
    item(`${tenant}-app`, 'unlabelled', null),
  ]);
  return encodeBody(messages, 'k8s.io.api.core.v1.ConfigMapList', {
    apiVersion: 'v1',
    kind: 'ConfigMapList',
    ...decodeMessage(messages, 'k8s.io.api.core.v1.ConfigMapList', list),
  });
}

t.test("a list page read in any pieces gives its ListMeta and the tenant's items only, in the tenant's names", NEEDS_PROTO, async (t) => {
  const body = upstreamPage();
  const read = (pieces: number) => {
    const page = new ProtobufListPage(configMaps, ctx, 'v1');
    const items: ConvertedItem[] = [];
    for (let at = 0; at < body.length; at += pieces) items.push(...page.write(body.subarray(at, at + pieces)));
    page.finish();
    return { page, items };
  };
  const whole = read(body.length);
  t.same(whole.page.listMeta && { resourceVersion: whole.page.listMeta.resourceVersion, continue: whole.page.listMeta.continue }, {
    resourceVersion: '99',
    continue: 'next',
  });
  const decoded = whole.items.map(
    (item) => (decodeMessage(messages, 'k8s.io.api.core.v1.ConfigMapList', Buffer.concat(item.parts)) as { items: any[] }).items[0],
  );
  t.same(
    decoded.map((item: any) => `${item.metadata.namespace}/${item.metadata.name}`),
    ['default/a', 'app/b', 'app/unlabelled'],
    "the tenant's items (an unlabelled one in its namespace too), never another tenant's",
  );
  t.same(decoded[0].metadata.labels, { app: 'x' }, 'the tenant label removed');
  t.equal(
    whole.page.keptBytes,
    whole.items.reduce((sum, item) => sum + item.length, 0),
    'keptBytes counts the items written',
  );
  t.ok(whole.page.upstreamItemBytes > whole.page.keptBytes, "the upstream's item bytes, a bound of the view");
  for (const pieces of [1, 3, 17]) {
    const { items } = read(pieces);
    t.same(
      Buffer.concat(items.flatMap((item) => item.parts)),
      Buffer.concat(whole.items.flatMap((item) => item.parts)),
      `in pieces of ${pieces}: the same bytes`,
    );
  }
  t.throws(() => new ProtobufListPage(configMaps, ctx, 'v1').finish(), { code: 502 }, "a page cut off is the upstream's fault");
  const cut = new ProtobufListPage(configMaps, ctx, 'v1');
  cut.write(body.subarray(0, body.length - 5));
  t.throws(() => cut.finish(), { code: 502 });
});
