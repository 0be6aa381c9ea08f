// Kubernetes resource quantities ("4", "500m", "8Gi", "1e3"), as apimachinery's resource.ParseQuantity reads them,
// held exactly as a bigint of nano-units, and written back as text the apiserver accepts.
// Never rounds down, never trims, never guesses: text it cannot read as Kubernetes would is refused (null).

/** 1 unit in nano-units, the finest precision Kubernetes keeps. */
const NANO_PER_UNIT = 1_000_000_000n;

/** apimachinery caps a binary-suffixed quantity ("Ei") at the largest int64 number of units; decimal ones are not capped. */
const BINARY_CAP = (2n ** 63n - 1n) * NANO_PER_UNIT;

/**
 * Quantities of 10^100 units and more are refused: more than any quota means, and the bound keeps the bigint small
 * however large an exponent the text carries ("1e999999999" would take a gigabyte of digits to hold exactly).
 */
const MAX_DECIMAL_DIGITS_OF_UNITS = 100;

const DECIMAL_SUFFIXES: ReadonlyMap<string, number> = new Map([
  ['n', -9],
  ['u', -6],
  ['m', -3],
  ['', 0],
  ['k', 3],
  ['M', 6],
  ['G', 9],
  ['T', 12],
  ['P', 15],
  ['E', 18],
]);

const BINARY_SUFFIXES: ReadonlyMap<string, bigint> = new Map([
  ['Ki', 10n],
  ['Mi', 20n],
  ['Gi', 30n],
  ['Ti', 40n],
  ['Pi', 50n],
  ['Ei', 60n],
]);

/** Sign, integer digits, fraction digits (after a dot), and whatever follows: the suffix. */
const QUANTITY = /^([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)$/s;
const DECIMAL_EXPONENT = /^[eE]([+-]?[0-9]+)$/;

const INT32_MIN = -(2n ** 31n);
const INT32_MAX = 2n ** 31n - 1n;

/**
 * The quantity in nano-units, or null for text the apiserver refuses. A value finer than a nano-unit rounds up, away
 * from zero, as Kubernetes rounds ("0.1n" is 1n); negative quantities are read (validation refuses them later).
 * Stricter than apimachinery where it is laxer than its documented grammar: a number with no digit at all ("Gi", "-",
 * ".", which it reads as 0) and an exponent outside 32 bits (which it wraps: "1e4294967296" is 1 there) are refused.
 * Spaces are refused as ParseQuantity refuses them (the apiserver's JSON decoding trims them before it parses).
 */
export function parseQuantity(text: string): bigint | null {
  const match = QUANTITY.exec(text);
  if (match === null) return null;
  const [, sign = '', integerDigits = '', fractionDigits = '', suffix = ''] = match;
  if (integerDigits === '' && fractionDigits === '') return null;
  const digits = (integerDigits + fractionDigits).replace(/^0+/, '');
  const negative = sign === '-';

  const binaryPower = BINARY_SUFFIXES.get(suffix);
  if (binaryPower !== undefined) {
    if (digits === '') return 0n;
    const magnitude = roundUpDivide(BigInt(digits) * (1n << binaryPower) * NANO_PER_UNIT, 10n ** BigInt(fractionDigits.length));
    const capped = magnitude > BINARY_CAP ? BINARY_CAP : magnitude;
    return negative ? -capped : capped;
  }

  const exponent = decimalExponentOf(suffix);
  if (exponent === null) return null;
  if (digits === '') return 0n;
  // value = digits × 10^shift nano-units.
  const shift = exponent - fractionDigits.length + 9;
  // The value in units has digits.length + shift - 9 digits before the point.
  if (digits.length + shift - 9 > MAX_DECIMAL_DIGITS_OF_UNITS) return null;
  let magnitude: bigint;
  if (shift >= 0) magnitude = BigInt(digits) * 10n ** BigInt(shift);
  // Below one nano-unit whatever the digits: no need to build 10^-shift to know it rounds up to 1.
  else if (-shift > digits.length) magnitude = 1n;
  else magnitude = roundUpDivide(BigInt(digits), 10n ** BigInt(-shift));
  return negative ? -magnitude : magnitude;
}

/** The power of ten a decimal suffix ("k", "m", "", "e3", "E-2") stands for; null for any other suffix. */
function decimalExponentOf(suffix: string): number | null {
  const named = DECIMAL_SUFFIXES.get(suffix);
  if (named !== undefined) return named;
  const written = DECIMAL_EXPONENT.exec(suffix)?.[1];
  if (written === undefined) return null;
  const exponent = BigInt(written);
  return exponent < INT32_MIN || exponent > INT32_MAX ? null : Number(exponent);
}

function roundUpDivide(dividend: bigint, divisor: bigint): bigint {
  return (dividend + divisor - 1n) / divisor;
}

/**
 * Text for a quantity of nano-units that the apiserver accepts and parseQuantity reads back as the same value (for
 * any value parseQuantity returns): whole units when it has no fraction ("4"), else milli ("1500m"), micro ("5u") or
 * nano ("7n") units, the first that is exact.
 */
export function formatQuantity(nano: bigint): string {
  if (nano % NANO_PER_UNIT === 0n) return String(nano / NANO_PER_UNIT);
  if (nano % 1_000_000n === 0n) return `${nano / 1_000_000n}m`;
  if (nano % 1_000n === 0n) return `${nano / 1_000n}u`;
  return `${nano}n`;
}
