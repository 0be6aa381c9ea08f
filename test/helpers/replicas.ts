// tenantgate replicas for tests: `tenantgate serve` processes sharing one tenant store, each with an administrator's
// kubeconfig, started and stopped (gracefully, or killed) by name; kubeconfigs moved between them.
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEV_ADMIN, writeClientKubeconfig, type GatewayFiles } from '../../lib/dev.ts';
import { loadKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { spawnGateway, stopChild } from './stack.ts';

export interface Replica {
  name: string;
  child: ChildProcess;
  url: string;
  port: number;
  /** Its log lines so far (JSON). */
  logs: string[];
  /** tenantgate's administrator on this replica. */
  admin: string;
  /** Resolves with its exit code (null: killed by a signal) once it exits. */
  exited: Promise<number | null>;
}

export interface ReplicaSet {
  /** The replicas started and not stopped through stop(). */
  readonly live: ReadonlySet<Replica>;
  /** Starts a replica with the set's flags and `extraArgs` (a later flag wins). */
  start(name: string, extraArgs?: string[]): Promise<Replica>;
  /** SIGTERM (SIGKILL 5 s on); it leaves the set. */
  stop(replica: Replica): Promise<void>;
  stopAll(): Promise<void>;
}

export function replicaSet(dir: string, files: GatewayFiles, args: string[]): ReplicaSet {
  const live = new Set<Replica>();
  return {
    live,
    async start(name, extraArgs = []) {
      const { child, url, logs } = await spawnGateway(files, [...args, ...extraArgs]);
      const exited = new Promise<number | null>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
        else child.once('exit', (code) => resolve(code));
      });
      const admin = writeClientKubeconfig(join(dir, `admin-${name}-${child.pid}.kubeconfig`), url, files.ca, DEV_ADMIN);
      const replica = { name, child, url, port: Number(new URL(url).port), logs, admin, exited };
      live.add(replica);
      return replica;
    },
    async stop(replica) {
      live.delete(replica);
      await stopChild(replica.child);
    },
    async stopAll() {
      for (const replica of [...live]) {
        live.delete(replica);
        await stopChild(replica.child);
      }
    },
  };
}

let moved = 0;
/** The same kubeconfig (same credentials) pointing at `url` (another replica, a load balancer): a new file beside it. */
export function pointAt(kubeconfig: string, url: string): string {
  const text = readFileSync(kubeconfig, 'utf8').replaceAll(loadKubeconfig(kubeconfig).server, url);
  const file = `${kubeconfig}.moved-${++moved}`;
  writeFileSync(file, text, { mode: 0o600 });
  return file;
}

/** Polls `check` every 20 ms until it holds; resolves to how long that took, rejects after `limitMs`. */
export async function within(limitMs: number, what: string, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > limitMs) throw new Error(`${what}: not within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
