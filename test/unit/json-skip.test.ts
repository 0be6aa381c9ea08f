// The WebAssembly container skip against JSON.parse: it finds the end of every valid container, and never claims
// one for bytes that are cut, malformed or not JSON (the rewriter would then pass broken bytes on unchecked).
import t from 'tap';
import { containerEnd, indexWithin, newSkipEpoch } from '../../lib/stream/json-skip.ts';
import { TenantViewScanner } from '../../lib/stream/tenant-view.ts';
import { seededRandom } from '../../bench/k8s-payloads.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20261121);
const random = seededRandom(SEED);
const int = (n: number) => Math.floor(random() * n);
const pick = <T>(values: readonly T[]): T => values[int(values.length)]!;

const TEXT_POOL = [...'abcAZ09-._/: {}[],', '"', '\\', '\n', '\t', '\u0000', '\u001f', '\u007f', 'é', '€', '日', '😀', '\u2028', '\ud800'];
const SPACE = ['', '', '', ' ', '\n', '\t', '\r\n  '];

/** Valid JSON text of a random value, written with random whitespace (and, through JSON.stringify, every escape). */
function randomJson(depth: number): string {
  const gap = () => pick(SPACE);
  const roll = depth > 5 ? int(5) : int(8);
  switch (roll) {
    case 0:
      return JSON.stringify(Array.from({ length: int(30) }, () => pick(TEXT_POOL)).join(''));
    case 1:
      return pick(['0', '-0', '7', '-12', '3.25', '1e9', '1E-7', '-0.5e+3', '123456789012345678901234567890', '2.5E3']);
    case 2:
      return pick(['true', 'false', 'null']);
    case 3:
      // A long plain string: the 16-byte steps, and their tail near the end of the bytes.
      return JSON.stringify('x'.repeat(int(70)));
    case 4:
      return JSON.stringify(`\\u${'0123'}${pick(['"', '\\', '/', '\b', '\f', '\n', '\r', '\t'])}`);
    case 5:
    case 6:
      return `[${gap()}${Array.from({ length: int(5) }, () => randomJson(depth + 1)).join(`${gap()},${gap()}`)}${gap()}]`;
    default:
      return `{${gap()}${Array.from({ length: int(5) }, () => `${randomJson(0).startsWith('"') ? JSON.stringify(pick(TEXT_POOL) + pick(TEXT_POOL)) : '"k"'}${gap()}:${gap()}${randomJson(depth + 1)}`).join(`${gap()},${gap()}`)}${gap()}}`;
  }
}

function randomContainer(): string {
  for (;;) {
    const text = randomJson(0);
    if (text.startsWith('{') || text.startsWith('[')) return text;
  }
}

/** containerEnd over `bytes` as a scanner calls it: a fresh epoch, the container at `at`. */
function endOf(bytes: Buffer, at = 0, end = bytes.length): number {
  return containerEnd(newSkipEpoch(), bytes, end, at);
}

function isJsonContainer(bytes: Buffer): boolean {
  try {
    const value: unknown = JSON.parse(bytes.toString());
    return typeof value === 'object' && value !== null;
  } catch {
    return false;
  }
}

t.test(`valid containers: the skip ends exactly after the closing bracket (seed ${SEED})`, async (t) => {
  let checked = 0;
  for (let n = 0; n < 3000; n++) {
    const text = randomContainer();
    const bytes = Buffer.from(`${text}${pick(['', ',', ']', '}', ' "tail"', '{"next":1}'])}`);
    const container = Buffer.byteLength(text);
    const got = endOf(bytes);
    if (got !== container) {
      t.equal(got, container, `the end of ${JSON.stringify(text)}`);
      return;
    }
    // Every cut of it: never an end, and the scan stops no later than the cut.
    const cut = int(container);
    const cutEnd = endOf(bytes, 0, cut);
    if (cutEnd >= 0 || -1 - cutEnd > cut) {
      t.fail(`${JSON.stringify(text)} cut after ${cut} bytes gave ${cutEnd}`);
      return;
    }
    checked++;
  }
  t.equal(checked, 3000, 'every generated container was found whole and refused when cut');
});

t.test(`mutated containers: an end only for bytes JSON.parse accepts as an object or array (seed ${SEED})`, async (t) => {
  const MUTATIONS = ['"', '\\', '{', '}', '[', ']', ',', ':', ' ', '0', '-', '.', 'e', 't', 'n', 'x', '\u0001', '\u007f', 'é'];
  let accepted = 0;
  let refused = 0;
  for (let n = 0; n < 5000; n++) {
    const text = randomContainer();
    const at = int(text.length);
    const roll = int(3);
    const mutated =
      roll === 0
        ? text.slice(0, at) + pick(MUTATIONS) + text.slice(at + 1)
        : roll === 1
          ? text.slice(0, at) + pick(MUTATIONS) + text.slice(at)
          : text.slice(0, at) + text.slice(at + 1);
    const bytes = Buffer.from(mutated);
    const got = endOf(bytes);
    if (got >= 0) {
      if (!isJsonContainer(bytes.subarray(0, got))) {
        t.fail(`claimed ${JSON.stringify(bytes.subarray(0, got).toString())} as a container`);
        return;
      }
      accepted++;
    } else {
      if (-1 - got > bytes.length) {
        t.fail(`stopped past the end: ${got} for ${bytes.length} bytes`);
        return;
      }
      refused++;
    }
  }
  t.ok(accepted > 100 && refused > 1000, `both outcomes occur (${accepted} accepted, ${refused} refused)`);
});

t.test('malformed tokens are refused where they stand', async (t) => {
  const cases: [text: string, stop: number][] = [
    ['{,}', 1],
    ['[1,]', 3],
    ['{"a"}', 4],
    ['[01]', 2],
    ['{"a":tru}', 5],
    ['[1.]', 1],
    ['[1e]', 1],
    ['["\u0001"]', 1],
    ['{"a":"\\x"}', 5],
    ['{"a":"\\u12g4"}', 5],
    ['{"a":1]', 6],
    ['[}', 1],
    ['{"a" "b"}', 5],
    ['[nul]', 1],
  ];
  for (const [text, stop] of cases) t.equal(endOf(Buffer.from(text)), -1 - stop, `${JSON.stringify(text)} refused at byte ${stop}`);
});

t.test('63 levels of nesting are skipped; the 64th stops the skip at its bracket', async (t) => {
  const deep = (levels: number) => Buffer.from(`${'['.repeat(levels)}${']'.repeat(levels)}`);
  t.equal(endOf(deep(63)), 126);
  t.equal(endOf(deep(64)), -1 - 63);
  // The scanner goes on in JavaScript from there: an item nested 1,000 deep is still rewritten.
  const list = Buffer.from(`{"items":[{"metadata":{"namespace":"abc123-x"},"spec":${deep(1000).toString()}}]}`);
  const scanner = new TenantViewScanner('list', { tenant: 'abc123', nameField: 'namespace' });
  const out = Buffer.concat([scanner.write(list), scanner.finish()]);
  t.same(JSON.parse(out.toString()).items[0].metadata, { namespace: 'x' });
});

t.test('a window copied for one buffer is not used for another scan of other bytes', async (t) => {
  const first = Buffer.from('[[1,2],{"a":[3]}]            ');
  const second = Buffer.from('[[1,2,3,4,5,6,7],{"b":[]}]    ');
  const epoch = newSkipEpoch();
  t.equal(containerEnd(epoch, first, first.length, 1), 6);
  t.equal(endOf(second, 1), 16, 'another epoch copies its own bytes');
  t.equal(containerEnd(epoch, first, first.length, 7), 16, 'the first epoch copies its bytes again');
});

t.test('containers longer than half the window are left to the caller, up to where the window ends', async (t) => {
  const long = Buffer.from(JSON.stringify(Array.from({ length: 40_000 }, (_, i) => `item-${i}`)));
  const got = endOf(long);
  t.ok(got < 0 && -1 - got < long.length, `stopped at ${-1 - got} of ${long.length} bytes`);
  const small = Buffer.from(JSON.stringify(Array.from({ length: 100 }, (_, i) => `item-${i}`)));
  t.equal(endOf(small), small.length);
});

t.test(`needle search agrees with Buffer.indexOf, in the window and outside it (seed ${SEED})`, async (t) => {
  const needles = ['abc123', 'abc123-', '"f:kubezoo.io/tenant"', 'a', 'zz', '"podAffinity"'].map((text) => Buffer.from(text));
  let found = 0;
  for (let n = 0; n < 2000; n++) {
    // A container first, so that a skip copies the window the searches then run in; sometimes a search runs with a
    // stale epoch and falls back to Buffer.indexOf.
    const filler = Array.from({ length: int(60) }, () => pick(['abc', 'abc12', 'abc123', '-', ':', 'z', '"', 'f:kubezoo.io/tenant', 'podAffinity'])).join('');
    const bytes = Buffer.from(JSON.stringify([filler]));
    const epoch = newSkipEpoch();
    if (containerEnd(epoch, bytes, bytes.length, 0) !== bytes.length) {
      t.fail(`${bytes.toString()} not skipped`);
      return;
    }
    const needle = pick(needles);
    const from = int(bytes.length);
    const to = from + int(bytes.length - from + 1);
    const within = bytes.subarray(from, to).indexOf(needle);
    const want = within < 0 ? -1 : from + within;
    const got = indexWithin(int(4) === 0 ? newSkipEpoch() : epoch, bytes, from, to, needle);
    if (got !== want) {
      t.equal(got, want, `${needle.toString()} in ${JSON.stringify(bytes.subarray(from, to).toString())}`);
      return;
    }
    if (got >= 0) found++;
  }
  t.ok(found > 200, `found in ${found} of 2000 searches, and absent in the rest, as Buffer.indexOf says`);
});
