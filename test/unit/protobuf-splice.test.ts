// The searches of the protobuf fast path find what a plain indexOf of the range finds: the first occurrence wholly
// inside it, or none, whatever the range, the needle's bytes around it, and the order ranges are asked in.
import t from 'tap';
import { ForwardSearch, rangeIndexOf, SkipSearch } from '../../lib/convert/protobuf/splice.ts';
import { seededRandom } from '../helpers/fuzz.ts';

/** Text of few distinct bytes, the needle's among them, with the needle itself (and pieces of it) now and then. */
function textWith(needle: Buffer, length: number, random: (n: number) => number): Buffer {
  const alphabet = Buffer.concat([needle, Buffer.from('{}":,')]);
  const out = Buffer.alloc(length);
  for (let at = 0; at < length;) {
    if (random(20) === 0) at += needle.copy(out, at, 0, 1 + random(needle.length));
    else out[at++] = alphabet[random(alphabet.length)]!;
  }
  return out;
}

t.test('SkipSearch: the first occurrence wholly inside the range, as indexOf of the range finds it', async (t) => {
  const random = seededRandom(1126);
  const needles = ['f:kubezoo.io/tenant', 'ab', 'x', 'aaa'].map((text) => Buffer.from(text));
  let found = 0;
  for (let round = 0; round < 3000; round++) {
    const needle = needles[round % needles.length]!;
    const text = textWith(needle, 1 + random(300), random);
    const from = random(text.length + 1);
    const to = from + random(text.length - from + 1);
    const want = rangeIndexOf(text, needle, from, to);
    const got = new SkipSearch(needle).indexIn(text, from, to);
    if (got !== want) t.fail(`round ${round}: ${got} where indexOf finds ${want} (needle ${needle}, [${from}, ${to}) of ${text.length})`);
    if (want !== -1) found++;
  }
  t.ok(found > 500, `found in ${found} of 3000 ranges`);
});

t.test('ForwardSearch: ranges asked in any order, and a buffer whose bytes change once forgotten', async (t) => {
  const random = seededRandom(18);
  const needle = Buffer.from([0x92, 0x01]);
  const search = new ForwardSearch(needle);
  let found = 0;
  for (let round = 0; round < 300; round++) {
    const text = textWith(needle, 1 + random(2000), random);
    let from = random(50);
    for (let query = 0; query < 20; query++) {
      // Mostly forward, as the items of a chunk; sometimes back.
      from = Math.max(0, Math.min(text.length, random(4) === 0 ? from - random(200) : from + random(150)));
      const to = from + random(text.length - from + 1);
      const want = rangeIndexOf(text, needle, from, to);
      const got = search.indexIn(text, from, to);
      if (got !== want) t.fail(`round ${round}, query ${query}: ${got} where indexOf finds ${want}`);
      if (want !== -1) found++;
    }
    search.forget();
    text.fill(0x41); // the same buffer, other bytes: a forgotten search reads them anew
    if (search.indexIn(text, 0, text.length) !== -1) t.fail(`round ${round}: a forgotten buffer's old bytes were found`);
    search.forget();
  }
  t.ok(found > 500, `found in ${found} ranges`);
});
