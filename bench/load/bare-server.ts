// Starts bench/bare-http2.ts, the floor of the benches: a bare node:http2 TLS server or proxy with no stages, on
// loopback. Its stderr lines are kept (an inspector's address among them, when started with one).
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { productionEnv } from '../../test/helpers/stack.ts';

const BARE_SERVER = fileURLToPath(new URL('../bare-http2.ts', import.meta.url));
const START_TIMEOUT_MS = 10_000;

/** The bare server in `mode` with `args` (bare-http2.ts's usage), once it listens: its process, URL and stderr lines. */
export async function spawnBare(mode: string, args: string[], nodeFlags: string[] = []): Promise<{ child: ChildProcess; url: string; stderr: string[] }> {
  const child = spawn(process.execPath, [...nodeFlags, BARE_SERVER, mode, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: productionEnv() });
  const stderr: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => stderr.length < 1_000 && stderr.push(line));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`bare server ${mode} did not start within ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
    child.once('exit', (code) => reject(new Error(`bare server ${mode} exited with ${code}: ${stderr.join(' ')}`)));
    createInterface({ input: child.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      resolve((JSON.parse(line) as { url: string }).url);
    });
  });
  return { child, url, stderr };
}
