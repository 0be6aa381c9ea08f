// Differential fuzzing of the byte rewriter against referenceListView/referenceWatchView (JSON.parse based), on
// generated Kubernetes-like objects written with random key order, whitespace, escapes and unicode, fed in random chunks.
import t from 'tap';
import { TenantViewError, TenantViewScanner, type TenantViewSpec } from '../../lib/stream/tenant-view.ts';
import { referenceListView, referenceWatchView } from '../../lib/stream/tenant-view-reference.ts';
import { tenantViewSpecOf } from '../../lib/stream/view-spec.ts';
import { seededRandom } from '../../bench/k8s-payloads.ts';
import { kindOf } from '../../lib/convert/kinds.ts';
import type { ConvertContext } from '../../lib/convert/rules/index.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20261102);

const random = seededRandom(SEED);
const int = (n: number) => Math.floor(random() * n);
const chance = (p: number) => random() < p;
const pick = <T>(values: readonly T[]): T => values[int(values.length)]!;
function shuffle<T>(values: T[]): T[] {
  for (let i = values.length - 1; i > 0; i--) {
    const j = int(i + 1);
    [values[i], values[j]] = [values[j]!, values[i]!];
  }
  return values;
}

const TENANT = 'abc123';
const CHAR_POOL = [
  ...'abcdefghijklmnopqrstuvwxyz0123456789-._/:',
  '"', '\\', '{', '}', '[', ']', ',', ' ',
  '\n', '\t', '\r', '\b', '\f', '\u0000', '\u001f', '\u007f',
  'é', '€', 'ß', '日', '本', '😀', '𝄞', '\u2028', '\ud800', '\udfff',
];

function randomText(max = 12): string {
  let out = '';
  for (let i = int(max + 1); i > 0; i--) out += pick(CHAR_POOL);
  return out;
}

/** A name-ish value for metadata.namespace / metadata.name: mostly the tenant's, some traps. */
function randomUpstreamName(): unknown {
  const tail = chance(0.7) ? pick(['default', 'kube-system', 'team-a', 'x']) : randomText(6);
  if (chance(0.5)) return `${TENANT}-${tail}`;
  return pick<() => unknown>([
    () => `zzz999-${tail}`,
    () => `${TENANT}${tail}`,
    () => `${TENANT}-`,
    () => TENANT,
    () => `abc1234-${tail}`,
    () => tail,
    () => null,
    () => 42,
    () => ({ value: `${TENANT}-${tail}` }),
  ])();
}

function randomValue(depth: number): unknown {
  const kind = depth > 3 ? int(6) : int(9);
  switch (kind) {
    case 0:
    case 1:
      return randomText();
    case 2:
      return chance(0.5) ? int(1000) - 500 : Number((random() * 1e6 - 5e5).toFixed(int(5)));
    case 3:
      return pick([true, false, null]);
    case 4:
      // Escaped JSON with decoy keys, like kubectl's last-applied-configuration.
      return JSON.stringify({ metadata: { namespace: randomUpstreamName(), name: randomUpstreamName() } });
    case 5:
      return pick(['namespace', 'metadata', 'name', `${TENANT}-default`, '']);
    case 6:
      return Array.from({ length: int(4) }, () => randomValue(depth + 1));
    default:
      return randomObject(depth + 1);
  }
}

function randomObject(depth: number): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (let i = int(5); i > 0; i--) {
    const key = chance(0.3) ? pick(['metadata', 'namespace', 'name', 'spec', 'template', 'items', 'type', 'object']) : randomText(6);
    object[key] = randomValue(depth);
  }
  return object;
}

/** Labels as upstream holds them: usually the tenant label, sometimes another tenant's, a bad value, or none. */
function randomLabels(): unknown {
  const labels: Record<string, unknown> = {};
  if (chance(0.5)) labels.app = randomText();
  const tenantLabel = pick<() => unknown>([() => TENANT, () => TENANT, () => TENANT, () => 'zzz999', () => null, () => 7, () => undefined]);
  const value = tenantLabel();
  if (value !== undefined) labels['kubezoo.io/tenant'] = value;
  if (chance(0.3)) labels[pick(['tier', 'kubezoo.io/tenantx', 'a.kubezoo.io/tenant'])] = randomText(4);
  return chance(0.95) ? Object.fromEntries(shuffle(Object.entries(labels))) : pick([null, ['x'], 'labels']);
}

/** A field set: the tenant label's field at random depths, beside other fields or alone (so sets empty out). */
function randomFieldSet(depth: number): Record<string, unknown> {
  const set: Record<string, unknown> = {};
  for (let i = int(3); i >= 0; i--) {
    const roll = int(6);
    if (roll === 0) set['f:kubezoo.io/tenant'] = {};
    else if (roll === 1 && depth < 3) set[pick(['f:metadata', 'f:labels', 'f:spec', 'f:template'])] = randomFieldSet(depth + 1);
    else if (roll === 2) set[`k:{"name":"${randomText(3)}"}`] = chance(0.5) ? {} : { 'f:kubezoo.io/tenant': {} };
    else set[pick(['f:data', '.', 'f:app', 'f:note'])] = {};
  }
  return set;
}

function randomManagedFields(): unknown {
  return Array.from({ length: int(3) + 1 }, () => {
    const entry: Record<string, unknown> = { manager: pick(['kubectl', 'kube-controller-manager', '"f:kubezoo.io/tenant":{}']), operation: 'Update' };
    // Upstream writes the object's own version here: built-in for the kinds the fast path takes (another tenant's
    // custom group stays as it is either way; the tenant's own would be un-prefixed only by the rule).
    entry.apiVersion = pick(['v1', 'apps/v1', 'zzz999-example.com/v1']);
    entry.fieldsType = 'FieldsV1';
    entry.fieldsV1 = chance(0.9) ? { 'f:metadata': { 'f:labels': { 'f:kubezoo.io/tenant': {}, ...(chance(0.5) ? { 'f:app': {} } : {}) } }, ...randomFieldSet(0) } : randomFieldSet(0);
    return entry;
  });
}

function randomOwnerReferences(): unknown {
  return Array.from({ length: int(3) }, () =>
    pick<() => unknown>([
      () => ({ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `web-${randomText(4)}`, uid: 'u', controller: true }),
      () => ({ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner' }),
      () => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: pick([`${TENANT}-reader`, 'zzz999-reader']) }),
      () => ({ apiVersion: pick([`${TENANT}-example.com/v1`, 'zzz999-example.com/v1']), kind: 'Widget', name: 'w' }),
      () => 'not an owner',
    ])(),
  );
}

/** Status conditions whose messages may name the tenant's objects under their upstream names. */
function randomStatus(): Record<string, unknown> {
  const status = randomObject(2);
  if (chance(0.3)) status.conditions = [{ type: 'Ready', message: pick([`pod ${TENANT}-team/x is ready`, 'all good', `group ${TENANT}:devs`]) }];
  return status;
}

function randomItem(): unknown {
  if (chance(0.04)) return randomValue(3); // not even an object
  const metadata: Record<string, unknown> = {};
  const fields: [string, () => unknown][] = [
    ['namespace', randomUpstreamName],
    ['name', randomUpstreamName],
    ['labels', randomLabels],
    ['managedFields', () => (chance(0.9) ? randomManagedFields() : randomValue(2))],
    ['ownerReferences', () => (chance(0.9) ? randomOwnerReferences() : randomValue(2))],
    ['annotations', () => ({ 'kubectl.kubernetes.io/last-applied-configuration': randomValue(4), note: randomText() })],
    ['resourceVersion', () => String(int(1e6))],
    ['template', () => ({ metadata: { namespace: `zzz999-x` } })],
  ];
  for (const [key, make] of shuffle(fields)) if (chance(0.85)) metadata[key] = make();
  const entries: [string, unknown][] = [
    ['apiVersion', 'v1'],
    ['kind', pick(['Pod', 'ConfigMap', 'Namespace'])],
    ['spec', { template: { metadata: { namespace: randomUpstreamName() } }, containers: [randomObject(2)], ...(chance(0.1) ? { affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ namespaces: [`${TENANT}-team`] }] } } } : {}) }],
    ['status', randomStatus()],
    ['data', randomObject(2)],
  ];
  if (chance(0.95)) entries.push(['metadata', chance(0.95) ? metadata : randomValue(3)]);
  const item: Record<string, unknown> = {};
  for (const [key, value] of shuffle(entries)) if (key === 'metadata' || chance(0.8)) item[key] = value;
  return item;
}

/**
 * JSON with random whitespace, escapes of any character, and number spellings JSON allows. `asGo`: only the
 * escapes Go's encoder writes, as kube-apiserver's answers have (the fast path's markers rely on it), and little space.
 */
function write(value: unknown, newlines: boolean, asGo = false): string {
  const space = () => (chance(asGo ? 0.99 : 0.9) ? '' : pick(newlines ? [' ', '\t', '\n', '\r\n', '  '] : [' ', '\t']));
  const string = (s: string) => {
    let out = '"';
    for (const ch of s) {
      const code = ch.codePointAt(0)!;
      const short: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\t': '\\t', '\r': '\\r', '\b': '\\b', '\f': '\\f' };
      const isLoneSurrogate = code >= 0xd800 && code <= 0xdfff;
      if (short[ch] !== undefined && chance(0.8)) out += short[ch];
      else if (code < 0x20 || ch === '"' || ch === '\\' || isLoneSurrogate || (!asGo && chance(0.05))) {
        for (let i = 0; i < ch.length; i++) out += '\\u' + ch.charCodeAt(i).toString(16).padStart(4, '0')[chance(0.5) ? 'toUpperCase' : 'toLowerCase']();
      } else if (ch === '/' && !asGo && chance(0.5)) out += '\\/';
      else out += ch;
    }
    return out + '"';
  };
  const number = (n: number) => {
    if (!Number.isInteger(n) || chance(0.7)) return String(n);
    return pick([`${n}e0`, `${n}E+0`, `${n}.0`, `${n * 10}e-1`]);
  };
  const go = (v: unknown): string => {
    if (v === null || typeof v === 'boolean') return String(v);
    if (typeof v === 'number') return number(v);
    if (typeof v === 'string') return string(v);
    if (Array.isArray(v)) return '[' + space() + v.map((x) => go(x)).join(space() + ',' + space()) + space() + ']';
    const entries = Object.entries(v as object).map(([k, x]) => string(k) + space() + ':' + space() + go(x));
    return '{' + space() + entries.join(space() + ',' + space()) + space() + '}';
  };
  return space() + go(value) + space();
}

function randomList(maxItems: number, asGo = false): string {
  const envelope: [string, unknown][] = shuffle([
    ['kind', 'PodList'],
    ['apiVersion', 'v1'],
    ['metadata', { resourceVersion: String(int(1e6)), continue: chance(0.3) ? randomText() : '', remainingItemCount: int(50) }],
    ['items', chance(0.03) ? null : Array.from({ length: int(maxItems + 1) }, randomItem)],
  ]);
  return write(Object.fromEntries(envelope), true, asGo);
}

function randomWatch(maxEvents: number, asGo = false): string {
  const events: string[] = [];
  for (let i = int(maxEvents + 1); i > 0; i--) {
    const type = pick(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);
    let object: unknown = randomItem();
    if (type === 'BOOKMARK') {
      const metadata: Record<string, unknown> = { resourceVersion: String(int(1e6)), annotations: { 'k8s.io/initial-events-end': 'true' } };
      if (chance(0.2)) metadata[pick(['namespace', 'name'])] = randomUpstreamName(); // never from kube-apiserver; checked if so
      object = { kind: 'Pod', metadata };
    }
    if (type === 'ERROR') object = { kind: 'Status', status: 'Failure', message: `${TENANT}-x: ${randomText()}`, code: 410 };
    if (typeof object !== 'object' || object === null || Array.isArray(object)) object = { metadata: { namespace: randomUpstreamName() } };
    const entries: [string, unknown][] = shuffle([
      ['type', type],
      ['object', object],
    ]);
    events.push(write(Object.fromEntries(entries), false, asGo));
  }
  return events.join('\n') + (chance(0.5) ? '\n' : '');
}

function randomSpec(): TenantViewSpec {
  const nameField = pick(['namespace', 'name'] as const);
  const spec: TenantViewSpec = { tenant: TENANT, nameField };
  if (chance(0.25)) {
    spec.rewriteItem = (item: any) => (typeof item.metadata?.name === 'string' && item.metadata.name.endsWith('x') ? null : { seen: true, item });
  }
  if (chance(0.5)) spec.rewriteStatus = (status: any) => ({ ...status, message: String(status.message).replaceAll(`${TENANT}-`, '') });
  return spec;
}

function randomCuts(length: number): number[] {
  if (length < 200 && chance(0.1)) return Array.from({ length }, (_, i) => i);
  return Array.from({ length: int(6) }, () => int(length + 1)).sort((a, b) => a - b);
}

/**
 * The scanner's output for `input` cut at `cuts`, through write() and again through writeOwned() (which builds its
 * output over the chunks it is given): both must be the same bytes, or both the same error.
 */
function rewriteInPieces(kind: 'list' | 'watch', input: Buffer, spec: TenantViewSpec, cuts: number[]): Buffer {
  const copied = inPieces(kind, input, spec, cuts, false);
  const owned = inPieces(kind, input, spec, cuts, true);
  if (copied instanceof Error || owned instanceof Error) {
    if (!(copied instanceof Error && owned instanceof Error && copied.message === owned.message)) {
      throw new Error(`write() and writeOwned() differ: ${String(copied)} against ${String(owned)}`);
    }
    throw copied;
  }
  if (!copied.equals(owned)) throw new Error(`write() and writeOwned() differ:\n${copied.toString()}\n${owned.toString()}`);
  return copied;
}

function inPieces(kind: 'list' | 'watch', input: Buffer, spec: TenantViewSpec, cuts: number[], owned: boolean): Buffer | Error {
  const scanner = new TenantViewScanner(kind, spec);
  const out: Buffer[] = [];
  // A chunk given up to writeOwned() is a copy of its own, as a socket's would be.
  const write = (piece: Buffer) => (owned ? out.push(...scanner.writeOwned(Buffer.from(piece))) : out.push(scanner.write(piece)));
  try {
    let from = 0;
    for (const cut of cuts) {
      write(input.subarray(from, cut));
      from = cut;
    }
    write(input.subarray(from));
    out.push(scanner.finish());
  } catch (error) {
    return error as Error;
  }
  // Joined only now: a later write must not have touched what an earlier one returned.
  return Buffer.concat(out);
}

/** Parsed and re-serialized, so that number spellings, escapes and whitespace do not count. */
const normal = (json: string) => JSON.stringify(JSON.parse(json));
const normalLines = (ndjson: string) => ndjson.split('\n').filter((line) => line.trim() !== '').map(normal);

t.test(`generated lists: the rewriter agrees with JSON.parse + edit + JSON.stringify (seed ${SEED})`, async (t) => {
  let compared = 0;
  let keptItems = 0;
  let droppedItems = 0;
  for (let round = 0; round < 600; round++) {
    const input = Buffer.from(randomList(8));
    const spec = randomSpec();
    const want = referenceListView(input, spec).toString();
    const got = rewriteInPieces('list', input, spec, randomCuts(input.length)).toString();
    if (normal(got) !== want) {
      t.fail(`round ${round} disagrees`, { input: input.toString(), got, want, nameField: spec.nameField, slow: spec.rewriteItem !== undefined });
      return;
    }
    const items = JSON.parse(input.toString()).items;
    const kept = JSON.parse(want).items;
    keptItems += kept?.length ?? 0;
    droppedItems += (items?.length ?? 0) - (kept?.length ?? 0);
    compared++;
  }
  t.equal(compared, 600, `600 lists agree (${keptItems} items kept, ${droppedItems} dropped)`);
  t.ok(keptItems > 300 && droppedItems > 300, 'the generator exercises both outcomes');
});

t.test(`generated watch streams: the rewriter agrees with the reference, event by event (seed ${SEED})`, async (t) => {
  let events = 0;
  for (let round = 0; round < 400; round++) {
    const input = Buffer.from(randomWatch(6));
    const spec = randomSpec();
    const want = normalLines(referenceWatchView(input, spec).toString());
    const gotText = rewriteInPieces('watch', input, spec, randomCuts(input.length)).toString();
    if (/\n\s*\n/.test(gotText) || gotText.startsWith('\n')) {
      t.fail(`round ${round}: a blank line`, { gotText });
      return;
    }
    const got = normalLines(gotText);
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      t.fail(`round ${round} disagrees`, { input: input.toString(), got, want });
      return;
    }
    events += got.length;
  }
  t.ok(events > 500, `${events} events agree`);
});

// The fast path for kinds whose rule touches only metadata (tenantMetadata): it must agree with the rule itself,
// which the reference applies to every item, on input written as kube-apiserver writes it.
const RULE_CONTEXT: ConvertContext = {
  tenant: TENANT,
  scopeOf: () => undefined,
  kindScope: (apiVersion, kind) => (apiVersion.startsWith(`${TENANT}-example.com/`) && kind === 'Widget' ? 'Namespaced' : undefined),
};
const FAST_PATH_ROWS = [kindOf('', 'configmaps')!, kindOf('', 'pods')!, { ...kindOf('', 'configmaps')!, scope: 'Cluster' as const }];

t.test(`generated lists and watches of metadata-only kinds: the fast path agrees with the rule (seed ${SEED})`, async (t) => {
  let items = 0;
  let fast = 0;
  for (let round = 0; round < 500; round++) {
    const row = pick(FAST_PATH_ROWS);
    const spec = tenantViewSpecOf(row, RULE_CONTEXT);
    const rule = spec.rewriteItem!;
    let ruleCalls = 0;
    const counted: TenantViewSpec = { ...spec, rewriteItem: (item) => (ruleCalls++, rule(item)) };
    const kind = round % 2 === 0 ? 'list' : 'watch';
    const input = Buffer.from(kind === 'list' ? randomList(6, true) : randomWatch(6, true));
    const want = kind === 'list' ? [normal(referenceListView(input, spec).toString())] : normalLines(referenceWatchView(input, spec).toString());
    const gotText = rewriteInPieces(kind, input, counted, randomCuts(input.length)).toString();
    const got = kind === 'list' ? [normal(gotText)] : normalLines(gotText);
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      t.fail(`round ${round} (${kind} of ${row.resource}, ${row.scope}) disagrees`, { input: input.toString(), got, want });
      return;
    }
    const shown = kind === 'list' ? (JSON.parse(want[0]!).items ?? []).length : want.length;
    items += shown;
    fast += Math.max(0, shown - ruleCalls);
  }
  t.ok(items > 300, `${items} items and events shown agree with the rule`);
  t.ok(fast > items / 4, `${fast} of them took the fast path`);
});

t.test('fast path owner verdicts are per apiVersion and kind: a ReplicaSet-owned pod stays, one owned by another tenant\'s ClusterRole goes', async (t) => {
  const spec = tenantViewSpecOf(kindOf('', 'pods')!, RULE_CONTEXT);
  const pod = (name: string, owners: object[]) => ({ metadata: { name, namespace: `${TENANT}-web`, ownerReferences: owners } });
  const replicaSet = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-1', uid: 'u1', controller: true, blockOwnerDeletion: true };
  const items = [
    pod('a', [replicaSet]),
    pod('b', [{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: 'zzz999-reader', uid: 'u2' }]),
    pod('c', [replicaSet, { apiVersion: 'zzz999-example.com/v1', kind: 'Widget', name: 'w', uid: 'u3' }]),
    pod('d', [{ ...replicaSet, name: 'web-2' }]),
  ];
  const input = Buffer.from(JSON.stringify({ kind: 'PodList', metadata: {}, items }));
  const got = JSON.parse(rewriteInPieces('list', input, spec, []).toString()).items.map((item: any) => item.metadata.name);
  t.same(got, ['a', 'd'], 'owned from outside the tenant: not shown');
  t.same(got, JSON.parse(referenceListView(input, spec).toString()).items.map((item: any) => item.metadata.name), 'as the rule decides');
});

const MUTATION_BYTES = Buffer.from('"{}[],:\\ \n0123456789-+.eEtrufalsn\u0000x');

function mutate(input: Buffer): Buffer {
  const at = int(input.length);
  switch (int(6)) {
    case 0:
      return Buffer.concat([input.subarray(0, at), input.subarray(at + 1)]);
    case 1:
      return Buffer.concat([input.subarray(0, at), Buffer.from([chance(0.9) ? MUTATION_BYTES[int(MUTATION_BYTES.length)]! : 0x80 + int(128)]), input.subarray(at)]);
    case 2: {
      const copy = Buffer.from(input);
      copy[at] = MUTATION_BYTES[int(MUTATION_BYTES.length)]!;
      return copy;
    }
    case 3:
      return input.subarray(0, at);
    case 4: {
      const from = int(input.length);
      return Buffer.concat([input.subarray(0, at), input.subarray(from, from + int(20)), input.subarray(at)]);
    }
    default:
      return Buffer.concat([input.subarray(0, at), Buffer.from(pick(['"', '\\', '}', ']', '{"', '",', ':'])), input.subarray(at)]);
  }
}

/** True when `small` is `big` with some elements left out (in order). */
function isSubsequence(small: string[], big: string[]): boolean {
  let i = 0;
  for (const item of big) if (i < small.length && small[i] === item) i++;
  return i === small.length;
}

t.test(`mutated lists: an error exactly when the input is broken, and never an item the reference would not show (seed ${SEED})`, async (t) => {
  let errors = 0;
  let valid = 0;
  for (let round = 0; round < 2500; round++) {
    const input = mutate(Buffer.from(randomList(3)));
    const spec: TenantViewSpec = { tenant: TENANT, nameField: pick(['namespace', 'name'] as const) };
    let want: string | null = null;
    try {
      want = referenceListView(input, spec).toString();
    } catch {
      // broken JSON, or not a list
    }
    let got: string | null = null;
    try {
      got = rewriteInPieces('list', input, spec, randomCuts(input.length)).toString();
    } catch (error) {
      if (!(error instanceof TenantViewError)) {
        t.fail(`round ${round}: a ${(error as Error).name}, not a TenantViewError`, { input: input.toString(), error });
        return;
      }
    }
    if (want === null) {
      if (got !== null) {
        t.fail(`round ${round}: broken input was accepted`, { input: input.toString(), got });
        return;
      }
      errors++;
      continue;
    }
    if (got === null) {
      t.fail(`round ${round}: valid input was refused`, { input: input.toString(), want });
      return;
    }
    const gotList = JSON.parse(got);
    const wantList = JSON.parse(want);
    const gotItems = (gotList.items ?? []).map((item: unknown) => JSON.stringify(item));
    const wantItems = (wantList.items ?? []).map((item: unknown) => JSON.stringify(item));
    // Equal unless a mutation made duplicate keys, where the rewriter drops what JSON.parse would keep.
    if (!isSubsequence(gotItems, wantItems) || JSON.stringify({ ...gotList, items: 0 }) !== JSON.stringify({ ...wantList, items: 0 })) {
      t.fail(`round ${round}: the rewriter shows what the reference does not`, { input: input.toString(), got, want });
      return;
    }
    valid++;
  }
  t.ok(errors > 1000 && valid > 200, `${errors} broken inputs refused, ${valid} valid ones rewritten`);
});

t.test(`mutated watch events: an error exactly when the event is broken, and never an event the reference would not show (seed ${SEED})`, async (t) => {
  let errors = 0;
  let valid = 0;
  for (let round = 0; round < 1000; round++) {
    // One mutated event between two good ones; the mutation adds no newline, so the line-based reference applies.
    const [before, event, after] = [randomWatch(1).trim(), randomWatch(1).trim() || '{}', randomWatch(1).trim()];
    let broken = mutate(Buffer.from(event));
    while (broken.includes(0x0a)) broken = mutate(Buffer.from(event));
    const input = Buffer.concat([Buffer.from(before + '\n'), broken, Buffer.from('\n' + after + '\n')]);
    const spec: TenantViewSpec = { tenant: TENANT, nameField: 'namespace' };
    let want: string[] | null = null;
    try {
      want = normalLines(referenceWatchView(input, spec).toString());
    } catch {
      // a broken event
    }
    let got: string[] | null = null;
    try {
      got = normalLines(rewriteInPieces('watch', input, spec, randomCuts(input.length)).toString());
    } catch (error) {
      if (!(error instanceof TenantViewError)) {
        t.fail(`round ${round}: a ${(error as Error).name}, not a TenantViewError`, { input: input.toString(), error });
        return;
      }
    }
    if (want === null && got !== null) {
      t.fail(`round ${round}: a broken event was accepted`, { input: input.toString(), got });
      return;
    }
    if (want !== null && (got === null || !isSubsequence(got, want))) {
      t.fail(`round ${round}: the rewriter disagrees`, { input: input.toString(), got, want });
      return;
    }
    if (got === null) errors++;
    else valid++;
  }
  t.ok(errors > 300 && valid > 100, `${errors} broken streams refused, ${valid} valid ones rewritten`);
});
