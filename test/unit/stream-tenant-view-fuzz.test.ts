// Differential fuzzing of the byte rewriter against referenceListView/referenceWatchView (JSON.parse based), on
// generated Kubernetes-like objects written with random key order, whitespace, escapes and unicode, fed in random chunks.
import t from 'tap';
import { TenantViewError, TenantViewScanner, type TenantViewSpec } from '../../lib/stream/tenant-view.ts';
import { referenceListView, referenceWatchView } from '../../lib/stream/tenant-view-reference.ts';
import { tenantViewSpecOf } from '../../lib/stream/view-spec.ts';
import { TENANT, k8sJsonGenerator } from '../helpers/generated-k8s-json.ts';
import { kindOf } from '../../lib/convert/kinds.ts';
import type { ConvertContext } from '../../lib/convert/rules/index.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20261102);

const { int, chance, pick, randomList, randomWatch, mutate } = k8sJsonGenerator(SEED);

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
const normalLines = (ndjson: string) =>
  ndjson
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map(normal);

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

t.test("fast path owner verdicts are per apiVersion and kind: a ReplicaSet-owned pod stays, one owned by another tenant's ClusterRole goes", async (t) => {
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
  t.same(
    got,
    JSON.parse(referenceListView(input, spec).toString()).items.map((item: any) => item.metadata.name),
    'as the rule decides',
  );
});

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
