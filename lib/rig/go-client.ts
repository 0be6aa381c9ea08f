// Provides the test fixture test/fixtures/go-client (a client-go program that reads in protobuf) as a binary, built
// once per version of its source into the rig's cache directory. Never builds in the source tree: go may rewrite go.sum.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { rigCacheDir } from './build.ts';
import { runCommand } from './process.ts';

const SOURCE_DIR = new URL('../../test/fixtures/go-client/', import.meta.url).pathname;
const SOURCE_FILES = ['go.mod', 'go.sum', 'main.go'];
const BUILD_TIMEOUT_MS = 20 * 60_000;

export interface EnsureGoClientOptions {
  log?: (line: string) => void;
}

/** Offline first: the rig's build left client-go and k8s.io/api of its version in the module cache. */
function buildEnvironment(offline: boolean): NodeJS.ProcessEnv {
  return { ...process.env, GOFLAGS: '-mod=mod', GO111MODULE: 'on', GOWORK: 'off', ...(offline ? { GOPROXY: 'off' } : {}) };
}

async function sourceHash(): Promise<string> {
  const hash = createHash('sha256');
  for (const file of SOURCE_FILES)
    hash
      .update(file)
      .update('\0')
      .update(await readFile(join(SOURCE_DIR, file)))
      .update('\0');
  return hash.digest('hex').slice(0, 16);
}

/**
 * Returns the path of the go-client binary of the current source, building it if missing (cold: about 5 minutes on two
 * cores while client-go compiles; seconds once Go's build cache has it). The binary appears only whole, by rename.
 */
export async function ensureGoClient(options: EnsureGoClientOptions = {}): Promise<string> {
  const log = options.log ?? (() => {});
  const dir = join(rigCacheDir(), `go-client-${await sourceHash()}`);
  const binary = join(dir, 'go-client');
  if (existsSync(binary)) return binary;
  await mkdir(dir, { recursive: true });
  const work = await mkdtemp(join(dir, '.build-'));
  const partial = join(dir, `.partial-${process.pid}`);
  const started = Date.now();
  try {
    for (const file of SOURCE_FILES) await copyFile(join(SOURCE_DIR, file), join(work, file));
    // No -trimpath: with the rig's own flags, client-go's packages come from Go's build cache of the rig's build (about 6 s, not 5 min).
    const args = ['build', '-o', partial, '.'];
    let result = await runCommand('go', args, { cwd: work, env: buildEnvironment(true), timeoutMs: BUILD_TIMEOUT_MS });
    if (result.code !== 0 && /GOPROXY=off/.test(result.stderr)) {
      log('go-client: a module is missing from the module cache; building through the Go proxy');
      result = await runCommand('go', args, { cwd: work, env: buildEnvironment(false), timeoutMs: BUILD_TIMEOUT_MS });
    }
    if (result.code !== 0) throw new Error(`go-client: go build failed (${result.code}):\n${result.stderr.slice(-4000)}`);
    await rename(partial, binary);
  } finally {
    await rm(work, { recursive: true, force: true });
    await rm(partial, { force: true });
  }
  log(`go-client: built in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  return binary;
}
