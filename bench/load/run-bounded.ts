// Work on `count` indexes with at most `concurrency` of them in flight: load loops stay bounded in what they open at once.

/** Runs `work(index)` for every index below `count`, `concurrency` at a time; the results in index order. */
export async function runBounded<T>(count: number, concurrency: number, work: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      results[index] = await work(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return results;
}
