// The few things almost every integration test needs, once: waiting for a condition within a bound, and a kubectl
// run that must succeed. Each test file says how long it waits; none keeps a copy of the loop.
import type { KubectlResult } from './stack.ts';

export interface Patience {
  /** How long to keep asking (default 30 s). */
  withinMs?: number;
  /** How long to wait between two asks (default 250 ms). */
  everyMs?: number;
}

/** What `check` gave first that is neither undefined nor false, or undefined once `withinMs` has passed. */
export async function poll<T>(check: () => T | undefined | false | Promise<T | undefined | false>, patience: Patience = {}): Promise<T | undefined> {
  const deadline = Date.now() + (patience.withinMs ?? 30_000);
  for (;;) {
    const got = await check();
    if (got !== undefined && got !== false) return got;
    if (Date.now() > deadline) return undefined;
    await new Promise((resolve) => setTimeout(resolve, patience.everyMs ?? 250));
  }
}

/** As poll, but throws, naming `what`, when nothing came within the time. */
export async function eventually<T>(
  what: string | (() => string),
  check: () => T | undefined | false | Promise<T | undefined | false>,
  patience: Patience = {},
): Promise<T> {
  const got = await poll(check, patience);
  if (got === undefined) throw new Error(`${typeof what === 'string' ? what : what()}: not within ${patience.withinMs ?? 30_000} ms`);
  return got;
}

/** The stdout of a finished kubectl, or an Error with `what` and its stderr when it failed. */
export async function succeeded(result: KubectlResult | Promise<KubectlResult>, what: string): Promise<string> {
  const done = await result;
  if (done.code !== 0) throw new Error(`${what}: ${done.stderr}`);
  return done.stdout;
}

/** kubectl as the tenant (or anything with an id that runs kubectl), which must succeed: its stdout. */
export function kubectlOk(
  tenant: { id: string; kubectl(args: string[], options?: { input?: string }): Promise<KubectlResult> },
  args: string[],
  input?: string,
): Promise<string> {
  return succeeded(tenant.kubectl(args, input === undefined ? {} : { input }), `${tenant.id}: kubectl ${args.join(' ')}`);
}
