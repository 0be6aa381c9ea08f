// Feeds bytes to a fresh TenantViewScanner in pieces, as a stream would deliver them: what a test compares with the
// whole input's result (the scanner must give the same bytes however its input is cut).
import { TenantViewScanner, type TenantViewSpec } from '../../lib/stream/tenant-view.ts';

/** Everything the scanner emitted for `input` cut at `cuts` (ascending offsets), and the scanner, for its counters. */
export function scanInPieces(kind: 'list' | 'watch' | 'object', spec: TenantViewSpec, input: Buffer, cuts: readonly number[]): { bytes: Buffer; scanner: TenantViewScanner } {
  const scanner = new TenantViewScanner(kind, spec);
  const out: Buffer[] = [];
  let from = 0;
  for (const cut of [...cuts, input.length]) {
    out.push(scanner.write(input.subarray(from, cut)));
    from = cut;
  }
  out.push(scanner.finish());
  return { bytes: Buffer.concat(out), scanner };
}
