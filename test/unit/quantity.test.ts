// Resource quantities read as the apiserver reads them (exactly, in nano-units, rounding up below a nano-unit), text it
// would refuse refused, and values written back as text that reads back the same.
import t from 'tap';
import { formatQuantity, parseQuantity } from '../../lib/tenants/quantity.ts';

const UNIT = 1_000_000_000n;

t.test('quantities read as Kubernetes reads them', async (t) => {
  const table: [text: string, nano: bigint][] = [
    ['4', 4n * UNIT],
    ['0', 0n],
    ['500m', 500_000_000n],
    ['1.5', 1_500_000_000n],
    ['.5', 500_000_000n],
    ['1.', UNIT],
    ['+5m', 5_000_000n],
    ['007', 7n * UNIT],
    ['250u', 250_000n],
    ['7n', 7n],
    ['1k', 1000n * UNIT],
    ['2M', 2_000_000n * UNIT],
    ['3G', 3_000_000_000n * UNIT],
    ['1T', 10n ** 12n * UNIT],
    ['1P', 10n ** 15n * UNIT],
    ['1E', 10n ** 18n * UNIT],
    ['8Gi', 8n * 2n ** 30n * UNIT],
    ['1Ki', 1024n * UNIT],
    ['1.5Mi', 1_572_864n * UNIT],
    ['2Ti', 2n * 2n ** 40n * UNIT],
    ['1Pi', 2n ** 50n * UNIT],
    ['1Ei', 2n ** 60n * UNIT],
    ['1e3', 1000n * UNIT],
    ['1E3', 1000n * UNIT],
    ['1e+5', 100_000n * UNIT],
    ['1E-2', 10_000_000n],
    ['1.5e2', 150n * UNIT],
    ['1e30', 10n ** 30n * UNIT],
    ['0Gi', 0n],
    ['-0', 0n],
  ];
  for (const [text, nano] of table) t.equal(parseQuantity(text), nano, `${JSON.stringify(text)} is ${nano} nano-units`);
});

t.test('amounts finer than a nano-unit round up, so asking for a little never means nothing', async (t) => {
  t.equal(parseQuantity('0.1m'), 100_000n, '"0.1m" is 100000 nano-units');
  t.equal(parseQuantity('0.1n'), 1n, 'a tenth of a nano-unit is one nano-unit');
  t.equal(parseQuantity('1.0000000001'), UNIT + 1n, 'a digit past the nano-unit rounds up');
  t.equal(parseQuantity('1e-20'), 1n, 'a tiny exponent is one nano-unit');
  t.equal(parseQuantity('1e-2147483648'), 1n, 'the smallest exponent is one nano-unit, without building 10^2147483648');
  t.equal(parseQuantity('0.5Ki'), 512n * UNIT);
  t.equal(parseQuantity('0.000000000001Ki'), 2n, 'binary fractions round up too');
  t.equal(parseQuantity('-0.1n'), -1n, 'a negative value rounds away from zero, as Kubernetes does');
});

t.test('negative quantities are read (validation refuses them)', async (t) => {
  t.equal(parseQuantity('-1'), -UNIT);
  t.equal(parseQuantity('-500m'), -500_000_000n);
  t.equal(parseQuantity('-2Gi'), -2n * 2n ** 30n * UNIT);
});

t.test('binary quantities past int64 units are capped as Kubernetes caps them; decimal ones stay exact', async (t) => {
  const cap = (2n ** 63n - 1n) * UNIT;
  t.equal(parseQuantity('9Ei'), cap, '9Ei is the largest int64 number of units, as the apiserver stores it');
  t.equal(parseQuantity('-8.5Ei'), -cap);
  t.equal(parseQuantity('9E'), 9n * 10n ** 18n * UNIT, 'a decimal quantity past int64 keeps its value');
});

t.test('text the apiserver refuses, or that means nothing, is refused', async (t) => {
  for (const text of [
    '',
    '4x',
    '1.2.3',
    ' 4',
    '4 ',
    '--1',
    '+-1',
    '1e',
    '1e+',
    '1ee3',
    '1e3Ki',
    '1Ki2',
    '1i',
    '.5i',
    '0.1mi',
    '0.1am',
    '1K',
    '1m+',
    '1,5',
    '4\n',
    '1e99999999999999999999',
    'aoeu',
  ]) {
    t.equal(parseQuantity(text), null, `${JSON.stringify(text)} is refused`);
  }
});

t.test('text Kubernetes reads as 0 though it holds no digit is refused', async (t) => {
  for (const text of ['Gi', '-', '+', '.', '-.', 'e3', 'm']) t.equal(parseQuantity(text), null, `${JSON.stringify(text)} is refused`);
});

t.test('exponents Kubernetes would wrap, and values too large for any quota, are refused', async (t) => {
  t.equal(parseQuantity('1e4294967296'), null, 'an exponent past 32 bits is refused (Kubernetes would read it as 1)');
  t.equal(parseQuantity('1e99'), 10n ** 99n * UNIT, 'a value below 10^100 units is read');
  t.equal(parseQuantity('1e100'), null, '10^100 units is refused');
  t.equal(parseQuantity('1e2147483647'), null, 'the largest exponent is refused at once, without building its digits');
  t.equal(parseQuantity('0e2147483647'), 0n, 'zero times any exponent is zero');
});

t.test('quantities are written as text that reads back the same', async (t) => {
  const table: [nano: bigint, text: string][] = [
    [0n, '0'],
    [4n * UNIT, '4'],
    [1_500_000_000n, '1500m'],
    [500_000_000n, '500m'],
    [100_000n, '100u'],
    [7n, '7n'],
    [1_000_001n, '1000001n'],
    [8n * 2n ** 30n * UNIT, '8589934592'],
    [-500_000_000n, '-500m'],
  ];
  for (const [nano, text] of table) t.equal(formatQuantity(nano), text, `${nano} nano-units are written ${JSON.stringify(text)}`);
  for (const text of ['4', '500m', '1.5', '8Gi', '1k', '1e3', '0.1m', '0.1n', '1.5Mi', '9Ei', '1e-7', '123456789.123456789', '-3m', '1e99']) {
    const nano = parseQuantity(text);
    if (nano === null) throw new Error(`${text} should parse`);
    t.equal(parseQuantity(formatQuantity(nano)), nano, `${JSON.stringify(text)} written as ${JSON.stringify(formatQuantity(nano))} reads back the same`);
  }
});
