// `npm test`'s tap run inside a broker of shared rigs (test/helpers/shared-rigs.ts): tap's arguments pass through,
// its exit code is this script's, and every rig the broker started is stopped when tap ends, however it ends.
import { spawn } from 'node:child_process';
import { RIG_BROKER_ENV, RigBroker } from './helpers/shared-rigs.ts';

const TAP = new URL('../node_modules/.bin/tap', import.meta.url).pathname;

const broker = new RigBroker();
const address = await broker.start();
const started = Date.now();
const tap = spawn(TAP, process.argv.slice(2), { stdio: 'inherit', env: { ...process.env, [RIG_BROKER_ENV]: address } });
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => tap.kill(signal));
const code = await new Promise<number>((resolve) => tap.on('exit', (exitCode, signal) => resolve(exitCode ?? (signal === null ? 1 : 128))));
await broker.stop();
const { rigsStarted, loans, discarded } = broker.figures;
process.stderr.write(
  `shared rigs: ${rigsStarted} started, lent ${loans} times, ${discarded} stopped early, in ${((Date.now() - started) / 1000).toFixed(0)} s of tests\n`,
);
process.exit(code);
