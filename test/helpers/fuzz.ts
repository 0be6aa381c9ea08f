// Reproducible mutations of valid request bodies for fuzz tests: truncations, bit flips, byte changes and splices.
// Never touches the bytes it is given: each mutant is a copy.

/** A seeded generator: random(n) is an integer in [0, n). The same seed gives the same sequence on every run. */
export function seededRandom(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return Math.floor((state / 2147483648) * n);
  };
}

/** One to three mutations of `valid`, none in its first `keep` bytes (a magic number worth keeping). */
export function mutate(valid: Buffer, random: (n: number) => number, keep = 0): Buffer {
  let body = Buffer.from(valid);
  for (let n = 1 + random(3); n > 0; n--) {
    const p = keep + random(body.length - keep);
    const op = random(4);
    if (op === 0) body = body.subarray(0, p);
    else if (op === 1) body[p]! ^= 1 << random(8);
    else if (op === 2) body[p] = random(256);
    else {
      const from = random(body.length);
      body = Buffer.concat([body.subarray(0, p), body.subarray(from, from + random(32)), body.subarray(p)]);
    }
  }
  return body;
}
