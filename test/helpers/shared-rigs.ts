// Rigs shared between test files, one file at a time. A broker (run by test/with-shared-rigs.ts around tap) keeps
// the rigs it started alive for the whole run and lends each to one file at a time, so a run starts a few rigs
// instead of one per file (8.5 s of start and 1.2 s of stop each on the 2-core machine). A file borrows through
// startStack (test/helpers/stack.ts) when the broker's address is in its environment; run alone, it starts its own.
//
// What a borrowing file must live with: earlier files' tenants' objects stay upstream (so tenant ids are unique in the
// whole run, which the broker checks), and the upstream cannot be restarted. What the broker puts back on return:
// platform classes and webhook configurations made since the rig started, which would otherwise reach later files'
// tenants (their views of the platform's classes, their admission).
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { Rig } from '../../lib/rig/harness.ts';
import { rigKubectl, startRig } from '../../lib/rig/harness.ts';
import { isProcessAlive } from '../../lib/rig/process.ts';
import { upstreamJson } from '../../lib/upstream/client.ts';
import { UpstreamPool } from '../../lib/upstream/pool.ts';

/** The environment variable that carries the broker's address to test files. */
export const RIG_BROKER_ENV = 'TENANTGATE_TEST_RIG_BROKER';

/** What a file needs to reach a lent rig: everything of a Rig but its functions. */
type RigDescription = Pick<Rig, 'dir' | 'binaries' | 'etcdEndpoint' | 'server' | 'caPem' | 'admin' | 'adminKubeconfigPath' | 'processes'>;

/**
 * Cluster-scoped collections put back to the rig's first state when a file returns it: what a later file's tenants
 * would otherwise see as the platform's (classes) or meet in their requests (webhooks).
 */
const RESET_COLLECTIONS = [
  '/apis/scheduling.k8s.io/v1/priorityclasses',
  '/apis/storage.k8s.io/v1/storageclasses',
  '/apis/networking.k8s.io/v1/ingressclasses',
  '/apis/node.k8s.io/v1/runtimeclasses',
  '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
  '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
];

/** How often the broker looks whether a borrower still runs (a file killed by tap's timeout returns nothing). */
const BORROWER_CHECK_MS = 1_000;

interface PooledRig {
  id: number;
  controllers: boolean;
  rig: Rig;
  /** Names in each RESET_COLLECTIONS collection when the rig was new. */
  firstState: Map<string, Set<string>>;
  /** The borrowing file's process, or null while the rig is free. */
  borrower: number | null;
  borrowerFile: string;
}

async function namesIn(pool: UpstreamPool, collection: string): Promise<Set<string>> {
  const answer = await upstreamJson(pool, 'GET', collection);
  if (answer.status !== 200) throw new Error(`GET ${collection}: ${answer.status}`);
  return new Set(((answer.body as { items?: { metadata: { name: string } }[] }).items ?? []).map((item) => item.metadata.name));
}

export interface BrokerFigures {
  rigsStarted: number;
  loans: number;
  discarded: number;
}

/** Lends rigs to test files over HTTP on loopback; started and stopped by test/with-shared-rigs.ts. */
export class RigBroker {
  readonly #rigs: PooledRig[] = [];
  /** Tenant id → the file that made it first in this run. */
  readonly #tenantIds = new Map<string, string>();
  readonly #figures: BrokerFigures = { rigsStarted: 0, loans: 0, discarded: 0 };
  #server: Server | null = null;
  #checker: NodeJS.Timeout | undefined;
  #nextId = 1;

  get figures(): BrokerFigures {
    return { ...this.#figures };
  }

  /** Listens on loopback; resolves to the address files are given. */
  async start(): Promise<string> {
    const server = createServer((req, res) => void this.#serve(req, res));
    this.#server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.#checker = setInterval(() => this.#reclaimFromGone(), BORROWER_CHECK_MS);
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    clearInterval(this.#checker);
    this.#server?.close();
    await Promise.allSettled(this.#rigs.splice(0).map((pooled) => pooled.rig.stop()));
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      if (req.url === '/borrow') answer(200, await this.#lend(body.controllers === true, body.pid, body.file));
      else if (req.url === '/return') answer(200, await this.#takeBack(body.id, body.pid));
      else if (req.url === '/tenant-ids') answer(...this.#claimTenantIds(body.ids, body.file));
      else answer(404, { message: `no ${req.url}` });
    } catch (error) {
      answer(500, { message: (error as Error).message });
    }
  }

  async #lend(controllers: boolean, pid: number, file: string): Promise<{ id: number; rig: RigDescription }> {
    let pooled = this.#rigs.find((candidate) => candidate.borrower === null && candidate.controllers === controllers);
    if (pooled === undefined) {
      const rig = await startRig({ controllers });
      const pool = new UpstreamPool(rig.admin);
      try {
        const firstState = new Map<string, Set<string>>();
        for (const collection of RESET_COLLECTIONS) firstState.set(collection, await namesIn(pool, collection));
        // (Lent below before anything else can run: nobody else can take it meanwhile.)
        pooled = { id: this.#nextId++, controllers, rig, firstState, borrower: null, borrowerFile: '' };
      } catch (error) {
        await rig.stop();
        throw error;
      } finally {
        pool.close();
      }
      this.#rigs.push(pooled);
      this.#figures.rigsStarted++;
    }
    pooled.borrower = pid;
    pooled.borrowerFile = file;
    this.#figures.loans++;
    const { dir, binaries, etcdEndpoint, server, caPem, admin, adminKubeconfigPath, processes } = pooled.rig;
    return { id: pooled.id, rig: { dir, binaries, etcdEndpoint, server, caPem, admin, adminKubeconfigPath, processes } };
  }

  /** Puts the rig's platform collections back as they were when it was new, then frees it. */
  async #takeBack(id: number, pid: number): Promise<Record<string, never>> {
    const pooled = this.#rigs.find((candidate) => candidate.id === id && candidate.borrower === pid);
    if (pooled === undefined) throw new Error(`rig ${id} is not lent to process ${pid}`);
    const pool = new UpstreamPool(pooled.rig.admin);
    try {
      for (const [collection, first] of pooled.firstState) {
        for (const name of await namesIn(pool, collection)) {
          if (first.has(name)) continue;
          const deleted = await upstreamJson(pool, 'DELETE', `${collection}/${encodeURIComponent(name)}`);
          if (deleted.status !== 200 && deleted.status !== 202 && deleted.status !== 404) throw new Error(`DELETE ${collection}/${name}: ${deleted.status}`);
        }
      }
    } catch (error) {
      // Not put back: no later file gets it.
      this.#discard(pooled);
      throw error;
    } finally {
      pool.close();
    }
    pooled.borrower = null;
    return {};
  }

  /** A rig whose borrower ended without returning it is in a state nobody knows: stopped, not lent again. */
  #reclaimFromGone(): void {
    // (A copy: #discard removes from the list.)
    for (const pooled of [...this.#rigs]) {
      if (pooled.borrower !== null && !isProcessAlive(pooled.borrower)) {
        process.stderr.write(`shared rigs: ${pooled.borrowerFile} ended without returning rig ${pooled.id}; it is stopped\n`);
        this.#discard(pooled);
      }
    }
  }

  #discard(pooled: PooledRig): void {
    this.#rigs.splice(this.#rigs.indexOf(pooled), 1);
    this.#figures.discarded++;
    void pooled.rig.stop();
  }

  #claimTenantIds(ids: string[], file: string): [number, unknown] {
    for (const id of ids) {
      const owner = this.#tenantIds.get(id);
      if (owner !== undefined && owner !== file) {
        return [409, { message: `tenant id ${id} is ${basename(owner)}'s in this run: files share rigs, so each gives its tenants ids of its own` }];
      }
    }
    for (const id of ids) this.#tenantIds.set(id, file);
    return [200, {}];
  }
}

async function askBroker<T>(path: string, body: unknown): Promise<T> {
  const answer = await fetch(`${process.env[RIG_BROKER_ENV]}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const parsed = (await answer.json()) as T & { message?: string };
  if (answer.status !== 200) throw new Error(`shared rigs: ${parsed.message ?? answer.status}`);
  return parsed;
}

/** True when this process runs under the broker, so startStack borrows a rig unless the file wants its own. */
export function sharedRigsOffered(): boolean {
  return process.env[RIG_BROKER_ENV] !== undefined;
}

/** The test file this process runs (what the broker names in its messages). */
function testFile(): string {
  return process.argv[1] ?? `pid ${process.pid}`;
}

/**
 * A rig borrowed from the broker, as a Rig: kubectl with a discovery cache of this borrower's own, no restarts
 * (other files' rigs they are not), and stop() returning it.
 */
export async function borrowRig(controllers: boolean): Promise<Rig> {
  const lent = await askBroker<{ id: number; rig: RigDescription }>('/borrow', { controllers, pid: process.pid, file: testFile() });
  const kubectlCacheDir = mkdtempSync(join(tmpdir(), 'tenantgate-kubectl-cache-'));
  const refuse = async () => {
    throw new Error('a shared rig cannot be restarted: give this file a rig of its own (startStack({ rig: "private" }))');
  };
  let returned: Promise<void> | undefined;
  return {
    ...lent.rig,
    kubectl: rigKubectl(lent.rig.binaries, lent.rig.adminKubeconfigPath, kubectlCacheDir),
    stopApiserver: refuse,
    startApiserver: refuse,
    stop() {
      returned ??= (async () => {
        rmSync(kubectlCacheDir, { recursive: true, force: true });
        await askBroker('/return', { id: lent.id, pid: process.pid });
      })();
      return returned;
    },
  };
}

/** Records tenant ids as this file's for the run; throws when another file already made one of them. */
export async function claimTenantIds(ids: string[], file = testFile()): Promise<void> {
  await askBroker('/tenant-ids', { ids, file });
}
