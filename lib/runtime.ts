// How to start a tenantgate process: the Node flags it wants, for everyone who spawns one (tests, bench).
// The same flag stands in cli.ts's shebang, the Dockerfile and package.json's start script.

/**
 * Streamed bodies churn through short-lived Buffers; a 1 MB young generation collects them often enough that
 * RSS stays near its baseline (measured: +15 MB for a 400 MB list, against +40 MB with V8's default).
 */
export const TENANTGATE_NODE_FLAGS = ['--max-semi-space-size=1'];

