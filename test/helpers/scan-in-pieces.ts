// Feeds bytes to a fresh converter (the TenantViewScanner, the protobuf engine) in pieces, as a stream would deliver
// them: what a test compares with the whole input's result (the same bytes however the input is cut).
import { TenantViewScanner, type TenantViewSpec } from '../../lib/stream/tenant-view.ts';

/** Everything a piecewise converter (write, then finish) emitted for `input` cut at `cuts` (ascending offsets). */
export function feedInPieces(converter: { write(chunk: Buffer): Buffer; finish(): Buffer }, input: Buffer, cuts: readonly number[]): Buffer {
  const out: Buffer[] = [];
  let from = 0;
  for (const cut of [...cuts, input.length]) {
    out.push(converter.write(input.subarray(from, cut)));
    from = cut;
  }
  out.push(converter.finish());
  return Buffer.concat(out);
}

/** Everything the scanner emitted for `input` cut at `cuts` (ascending offsets), and the scanner, for its counters. */
export function scanInPieces(
  kind: 'list' | 'watch' | 'object',
  spec: TenantViewSpec,
  input: Buffer,
  cuts: readonly number[],
): { bytes: Buffer; scanner: TenantViewScanner } {
  const scanner = new TenantViewScanner(kind, spec);
  return { bytes: feedInPieces(scanner, input, cuts), scanner };
}
