// How to start a tenantgate process: the Node flags it wants, for everyone who spawns one (tests, bench).
// The same flags stand in cli.ts's shebang, the Dockerfile and package.json's start and dev scripts.

/**
 * Streamed bodies churn through short-lived Buffers; a 1 MB young generation collects them often enough that
 * RSS stays near its baseline (measured: +15 MB for a 400 MB list, against +40 MB with V8's default).
 * Those Buffers that live past two young collections (in flight to a socket) are promoted, and against a small heap
 * (about 25 MB) V8 set its old generation's limit only about 9 MB above it: a full collection every 10-20 MB streamed,
 * 40% of tenantgate's CPU on a protobuf list. A 64 MB floor for that limit, measured on a LIST of 5,000 pods
 * (47.7 MB): CPU per list 694 -> 285 ms, its RSS peak growth 23 -> 14 MB; 10 MB of ConfigMaps: 99 -> 30 ms.
 * The floor must stand well above the live heap: at 40 MB (just above it with 5,000 pods cached) the list took 549 ms.
 * Its price is garbage kept up to the floor: RSS per idle watcher in the quick watch-fanout bench (200 watchers) was
 * 21 KB against 6 KB without it (one run each).
 */
export const TENANTGATE_NODE_FLAGS = ['--max-semi-space-size=1', '--initial-old-space-size=64'];
