// Child processes for the rig: long-running binaries run under a tiny `sh` watchdog so none outlives Node (even
// after SIGKILL), with output going to log files; short commands run to completion with a time limit.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readSync, fstatSync } from 'node:fs';
import type { Readable } from 'node:stream';

/**
 * Runs "$@" in the background and reports its pid on fd 3. It exits with the child's status.
 * - SIGTERM/SIGINT/SIGHUP to the watchdog are forwarded to the child (Node's graceful stop).
 * - A watcher blocks reading the watchdog's stdin, whose only writer is Node: when Node dies, however it dies,
 *   the read sees EOF and the watcher sends the child SIGTERM, then SIGKILL 5 s later.
 * A non-interactive shell gives background jobs /dev/null as stdin, hence the copy of the pipe on fd 4.
 */
const WATCHDOG_SCRIPT = `
exec 4<&0 </dev/null
"$@" 3>&- 4<&- &
child=$!
echo "$child" >&3
exec 3>&-
( read -r _ <&4; kill -TERM "$child" 2>/dev/null; sleep 5; kill -KILL "$child" 2>/dev/null ) &
watcher=$!
exec 4<&-
trap 'kill -TERM "$child" 2>/dev/null' TERM INT HUP
while :; do
  wait "$child"; code=$?
  kill -0 "$child" 2>/dev/null || break
done
kill "$watcher" 2>/dev/null
exit "$code"
`;

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SupervisedProcess {
  name: string;
  /** pid of the binary itself (the watchdog's child). */
  pid: number;
  /** pid of the `sh` watchdog; also the process group of everything it started. */
  watchdogPid: number;
  logPath: string;
  exited: Promise<ExitStatus>;
  hasExited(): boolean;
  /** SIGTERM, then SIGKILL to the whole process group after `graceMs`; resolves once the watchdog has exited. */
  stop(graceMs?: number): Promise<ExitStatus>;
}

export interface SuperviseOptions {
  logPath: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

const DEFAULT_STOP_GRACE_MS = 5_000;
const live = new Set<SupervisedProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' handlers cannot wait: ask each watchdog to stop its child; the closing stdin pipes back this up.
  process.on('exit', () => {
    for (const p of live) {
      try {
        process.kill(p.watchdogPid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
  });
}

function readFirstLine(stream: Readable, watchdog: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const newline = text.indexOf('\n');
      if (newline >= 0) {
        cleanup();
        resolve(text.slice(0, newline).trim());
      }
    };
    const onExit = () => {
      cleanup();
      reject(new Error(`watchdog exited before reporting its child's pid`));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const cleanup = () => {
      stream.off('data', onData);
      watchdog.off('exit', onExit);
      watchdog.off('error', onError);
    };
    stream.on('data', onData);
    watchdog.once('exit', onExit);
    watchdog.once('error', onError);
  });
}

/** Starts `command args` under the watchdog, stdout and stderr appended to `logPath`. */
export async function startSupervised(name: string, command: string, args: string[], options: SuperviseOptions): Promise<SupervisedProcess> {
  installExitHook();
  const logFd = openSync(options.logPath, 'a');
  let watchdog: ChildProcess;
  try {
    watchdog = spawn('/bin/sh', ['-c', WATCHDOG_SCRIPT, `${name}-watchdog`, command, ...args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      // Its own process group: a terminal's Ctrl+C reaches Node, which stops the rig in order.
      detached: true,
      stdio: ['pipe', logFd, logFd, 'pipe'],
    });
  } finally {
    closeSync(logFd);
  }
  let exitStatus: ExitStatus | undefined;
  const exited = new Promise<ExitStatus>((resolve) => {
    watchdog.once('exit', (code, signal) => {
      exitStatus = { code, signal };
      resolve(exitStatus);
    });
  });
  const pidLine = await readFirstLine(watchdog.stdio[3] as Readable, watchdog);
  (watchdog.stdio[3] as Readable).destroy();
  const watchdogPid = watchdog.pid!;
  let stopping: Promise<ExitStatus> | undefined;

  const handle: SupervisedProcess = {
    name,
    pid: Number(pidLine),
    watchdogPid,
    logPath: options.logPath,
    exited,
    hasExited: () => exitStatus !== undefined,
    stop(graceMs = DEFAULT_STOP_GRACE_MS) {
      stopping ??= (async () => {
        if (exitStatus === undefined) {
          watchdog.kill('SIGTERM');
          let timer: NodeJS.Timeout | undefined;
          const timedOut = await Promise.race([
            exited.then(() => false),
            new Promise<boolean>((resolve) => {
              timer = setTimeout(() => resolve(true), graceMs);
            }),
          ]);
          clearTimeout(timer);
          if (timedOut) {
            try {
              process.kill(-watchdogPid, 'SIGKILL');
            } catch {
              // the group emptied in the meantime
            }
          }
        }
        const status = await exited;
        // If the watchdog died abnormally its watcher is still waiting on this pipe: closing it kills the child.
        watchdog.stdin?.destroy();
        live.delete(handle);
        return status;
      })();
      return stopping;
    },
  };
  live.add(handle);
  void exited.then(() => {
    if (stopping === undefined) {
      watchdog.stdin?.destroy();
      live.delete(handle);
    }
  });
  return handle;
}

/** The last `maxLines` lines of a log file (reads at most its last 16 KiB). */
export function tailFile(path: string, maxLines = 40): string {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return `(no log at ${path})`;
  }
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, 16 * 1024);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    const lines = buffer.toString('utf8').split('\n');
    if (lines.at(-1) === '') lines.pop();
    return lines.slice(-maxLines).join('\n');
  } finally {
    closeSync(fd);
  }
}

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  input?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

/** Runs a short command to completion, capturing its output; throws if it cannot start or outlives `timeoutMs`. */
export function runCommand(command: string, args: string[], options: RunOptions = {}): Promise<CommandResult> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const result = { code: code ?? 128, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') };
      if (timedOut) reject(new Error(`${command} ${args.join(' ')} timed out after ${timeoutMs / 1000}s; stderr: ${result.stderr.slice(-2000)}`));
      else if (signal !== null) resolve({ ...result, stderr: result.stderr + `\n(killed by ${signal})` });
      else resolve(result);
    });
    child.stdin.on('error', () => {
      // the command may exit without reading its input
    });
    child.stdin.end(options.input ?? '');
  });
}

/** Whether a process with this pid exists (one we may not signal counts: EPERM). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
