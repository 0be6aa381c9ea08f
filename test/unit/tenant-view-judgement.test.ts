// The verdict on one item, from the spans the scanner notes of it: kept on the fast path, dropped, or given to the
// kind's rule. Each case is an item as the apiserver writes it, noted as the scanner notes it (walkItem), then judged.
import t from 'tap';
import { newSkipEpoch, walkItem } from '../../lib/stream/json-skip.ts';
import { ItemNotes } from '../../lib/stream/item-notes.ts';
import {
  ITEM_CAREFUL,
  ITEM_FAST,
  ITEM_FAST_RENAMED,
  ITEM_NOT_TENANTS,
  ITEM_UNCHECKED,
  itemRulesOf,
  judgeItem,
  tenantNameJson,
} from '../../lib/stream/item-judgement.ts';
import type { TenantMetadataView, TenantViewSpec } from '../../lib/stream/tenant-view-spec.ts';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';

const VERDICT = ['unchecked', 'not the tenant’s', 'fast', 'fast, renamed', 'careful'] as const;

const byNamespace: TenantViewSpec = { tenant: 'abc123', nameField: 'namespace' };
const byName: TenantViewSpec = { tenant: 'abc123', nameField: 'name' };
const rule = (item: any) => item;
const metadataView: TenantMetadataView = {
  ownerReferences: (owners) => owners,
  managedFields: (entries) => entries,
  slowPathMarkers: { volumes: ['"secretName"'] },
};
const withRule: TenantViewSpec = { ...byNamespace, rewriteItem: rule };
const withMetadata: TenantViewSpec = { ...byNamespace, rewriteItem: rule, tenantMetadata: metadataView };
const clusterWithMetadata: TenantViewSpec = { ...byName, rewriteItem: rule, tenantMetadata: metadataView };

/** The verdict on `json`, one item, for a scanner of `spec`: noted as the scanner notes it, then judged. */
function verdictOn(json: string, spec: TenantViewSpec): (typeof VERDICT)[number] {
  const buf = Buffer.from(json);
  const item = ItemNotes.forSpec(spec);
  item.start(true);
  const epoch = newSkipEpoch();
  const keys = item.walkKeys();
  if (keys === null || walkItem(epoch, buf, buf.length, 0, keys) !== buf.length) throw new Error(`not walked whole: ${json}`);
  item.takeWalked(buf, epoch);
  return VERDICT[judgeItem(item, buf, itemRulesOf(spec), epoch)]!;
}

const inNamespace = (namespace: string, more = '') => `{"metadata":{"name":"web","namespace":${JSON.stringify(namespace)}${more}}}`;

t.test('an item of the tenant is kept on the fast path; another tenant’s and the platform’s are dropped', async (t) => {
  t.equal(verdictOn(inNamespace('abc123-default'), byNamespace), 'fast');
  t.equal(verdictOn(inNamespace('xyz789-default'), byNamespace), 'not the tenant’s');
  t.equal(verdictOn(inNamespace('kube-system'), byNamespace), 'not the tenant’s');
  t.equal(verdictOn(inNamespace('abc123'), byNamespace), 'not the tenant’s', 'the id without its dash is not the prefix');
  t.equal(verdictOn(inNamespace('abc123-'), byNamespace), 'not the tenant’s', 'the prefix alone names nothing');
  t.equal(verdictOn('{"metadata":{"name":"abc123-ns"}}', byName), 'fast', 'cluster-scoped: judged by the name');
  t.equal(verdictOn('{"metadata":{"name":"kube-public"}}', byName), 'not the tenant’s');
});

t.test('only the item’s own top-level metadata counts, not a namespace deeper in its body', async (t) => {
  const nested = (top: string, deep: string) => `{"spec":{"template":{"metadata":{"namespace":"${deep}"}}},"metadata":{"name":"web","namespace":"${top}"}}`;
  t.equal(verdictOn(nested('xyz789-default', 'abc123-default'), byNamespace), 'not the tenant’s');
  t.equal(verdictOn(nested('abc123-default', 'xyz789-default'), byNamespace), 'fast');
});

t.test('an item whose name field cannot be checked is dropped as unchecked', async (t) => {
  t.equal(verdictOn('{"metadata":{"name":"web"}}', byNamespace), 'unchecked', 'no namespace');
  t.equal(verdictOn('{"kind":"Status"}', byNamespace), 'unchecked', 'no metadata');
  t.equal(verdictOn(inNamespace(''), byNamespace), 'unchecked', 'an empty namespace');
  t.equal(verdictOn('{"metadata":{"name":"web","namespace":7}}', byNamespace), 'unchecked', 'not a string');
  t.equal(verdictOn('{"metadata":{"name":"web","namespace":{"x":"abc123-a"}}}', byNamespace), 'unchecked', 'an object');
  t.equal(
    verdictOn('{"metadata":{"namespace":"abc123-default","namespace":"xyz789-default"}}', byNamespace),
    'unchecked',
    'written twice: parsers disagree on which counts',
  );
  t.equal(verdictOn('{"metadata":{"namespace":"abc123-a"},"metadata":{"namespace":"abc123-b"}}', byNamespace), 'unchecked', 'metadata written twice');
  const notAnObject = ItemNotes.forSpec(byNamespace);
  notAnObject.start(false);
  t.equal(judgeItem(notAnObject, Buffer.from('[1]'), itemRulesOf(byNamespace), newSkipEpoch()), ITEM_UNCHECKED, 'an array in items');
});

t.test('a name with escapes is decoded before it is judged', async (t) => {
  t.equal(verdictOn('{"metadata":{"name":"web","namespace":"abc123-d\\u0065fault"}}', byNamespace), 'fast, renamed');
  t.equal(verdictOn('{"metadata":{"namespace":"\\u0061bc123-default"}}', byNamespace), 'fast, renamed', 'an escape in the prefix');
  t.equal(verdictOn('{"metadata":{"namespace":"\\u0078yz789-default"}}', byNamespace), 'not the tenant’s');
  t.equal(tenantNameJson(Buffer.from('"\\u0061bc123-default"'), 0, 22, 'abc123')?.toString(), '"default"');
  t.equal(tenantNameJson(Buffer.from('"\\u0078yz789-default"'), 0, 22, 'abc123'), null);
});

t.test('with a rule and no byte-level metadata view, the tenant’s items go to the careful path', async (t) => {
  t.equal(verdictOn(inNamespace('abc123-default'), withRule), 'careful');
  t.equal(verdictOn(inNamespace('xyz789-default'), withRule), 'not the tenant’s', 'another tenant’s never reaches the rule');
  t.equal(
    verdictOn('{"metadata":{"name":"anything"}}', { tenant: 'abc123', nameField: null, rewriteItem: rule }),
    'careful',
    'no name field: the rule alone decides',
  );
});

t.test('with a metadata view: the tenant label decides as well as the name', async (t) => {
  const labelled = (value: string) => inNamespace('abc123-default', `,"labels":{"app":"web","${TENANT_LABEL}":${value}}`);
  t.equal(verdictOn(labelled('"abc123"'), withMetadata), 'fast');
  t.equal(verdictOn(labelled('"xyz789"'), withMetadata), 'not the tenant’s', 'labelled for another tenant');
  t.equal(verdictOn(labelled('"\\u0061bc123"'), withMetadata), 'fast', 'the label decoded');
  t.equal(verdictOn(labelled('true'), withMetadata), 'not the tenant’s', 'a label that is not a string');
  t.equal(verdictOn(inNamespace('abc123-default', ',"labels":{"app":"web"}'), withMetadata), 'fast', 'no tenant label');
});

t.test('with a metadata view: where the tenant’s id stands for the rule to un-prefix, the item takes the careful path', async (t) => {
  const owned = (name: string) => inNamespace('abc123-default', `,"ownerReferences":[{"apiVersion":"v1","kind":"Namespace","name":"${name}","uid":"u"}]`);
  t.equal(verdictOn(owned('abc123-team'), withMetadata), 'careful', 'an owner named with the prefix');
  t.equal(verdictOn(owned('web-7d9'), withMetadata), 'fast', 'an owner without the id');
  t.equal(verdictOn(owned('abc123'), withMetadata), 'fast', 'the id alone, followed by neither - nor :');
  const conditions = `{"metadata":{"name":"web","namespace":"abc123-default"},"status":{"conditions":[{"message":"namespace abc123-default is gone"}]}}`;
  t.equal(verdictOn(conditions, withMetadata), 'careful', 'a condition message naming the tenant’s namespace');
  const marked = `{"metadata":{"name":"web","namespace":"abc123-default"},"spec":{"volumes":[{"secret":{"secretName":"s"}}]}}`;
  t.equal(verdictOn(marked, withMetadata), 'careful', 'a marker of the kind in its spec');
  const unmarked = `{"metadata":{"name":"web","namespace":"abc123-default"},"spec":{"volumes":[{"emptyDir":{}}]}}`;
  t.equal(verdictOn(unmarked, withMetadata), 'fast');
  t.equal(verdictOn('{"metadata":{"name":"abc123-ns","generateName":"abc123-"}}', clusterWithMetadata), 'careful', 'a prefixed generateName');
  t.equal(verdictOn(owned('abc123-team').replace('abc123-default', 'xyz789-default'), withMetadata), 'not the tenant’s', 'the name first');
});

t.test('the verdicts are distinct numbers', async (t) => {
  t.equal(new Set([ITEM_UNCHECKED, ITEM_NOT_TENANTS, ITEM_FAST, ITEM_FAST_RENAMED, ITEM_CAREFUL]).size, VERDICT.length);
});
