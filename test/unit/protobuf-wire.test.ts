// The one varint reader every protobuf path uses (request bodies, upstream answers, streams, the splicing fast path):
// what it reads, where it stops, and its two answers for bytes that hold no whole varint.
import t from 'tap';
import { pushVarint, VARINT_CUT, VARINT_TOO_LONG, varintAt, varintBitsAt, varintEnd } from '../../lib/convert/protobuf/wire.ts';

const encoded = (value: number) => {
  const out: number[] = [];
  pushVarint(out, value);
  return Buffer.from(out);
};

t.test('reads every size of varint exactly, after any offset, and says where it ends', async (t) => {
  for (const value of [0, 1, 127, 128, 300, 2 ** 14, 2 ** 21 - 1, 2 ** 28 - 1, 2 ** 28, 2 ** 35 + 7, 2 ** 49 + 1, Number.MAX_SAFE_INTEGER]) {
    const bytes = Buffer.concat([Buffer.from([0xff, 0x01]), encoded(value), Buffer.from([0x05])]);
    t.equal(varintAt(bytes, 2, bytes.length), value, `${value}`);
    t.equal(varintEnd, bytes.length - 1, `${value} ends before the next field`);
  }
});

t.test('a varint the bytes end inside is cut, at every point; one past 10 bytes is too long', async (t) => {
  const whole = encoded(2 ** 49 + 1);
  for (let end = 0; end < whole.length; end++) t.equal(varintAt(whole, 0, end), VARINT_CUT, `${end} of ${whole.length} bytes`);
  t.equal(varintAt(whole, 0, whole.length), 2 ** 49 + 1);
  const eleven = Buffer.from([...Array(10).fill(0x80), 0x01]);
  t.equal(varintAt(eleven, 0, eleven.length), VARINT_TOO_LONG);
  t.equal(varintAt(eleven, 0, 9), VARINT_CUT, 'not yet too long while it may still end');
});

t.test("an int64's every bit, which a float cannot hold", async (t) => {
  // -1 as an int64 field: ten bytes, all 64 bits set.
  const minusOne = Buffer.from([...Array(9).fill(0xff), 0x01]);
  t.ok(varintAt(minusOne, 0, minusOne.length) > 0, 'found whole');
  t.equal(varintBitsAt(minusOne, 0, varintEnd), 2n ** 64n - 1n);
  t.equal(BigInt.asIntN(64, varintBitsAt(minusOne, 0, varintEnd)), -1n);
  const big = encoded(2 ** 40 + 3);
  varintAt(big, 0, big.length);
  t.equal(varintBitsAt(big, 0, varintEnd), 2n ** 40n + 3n);
});
