#!/usr/bin/env -S node --max-semi-space-size=1 --initial-old-space-size=64
// (The shebang's Node flags: see TENANTGATE_NODE_FLAGS in runtime.ts.)
// The `tenantgate` command: serve, dev, tenant, rig. Parses arguments and hands over; no logic of its own.
import { parseArgs } from 'node:util';
import { describeOptions, parseServeConfig, SERVE_OPTIONS } from './config.ts';
import { runDev } from './dev.ts';
import { log } from './log.ts';
import { ensureRigBinaries } from './rig/build.ts';
import { startGateway } from './server/gateway.ts';
import { DEFAULT_SHUTDOWN_TIMES } from './server/shutdown.ts';
import { runTenantCommand } from './tenants/tenant-command.ts';

const DEV_OPTIONS = {
  dir: { type: 'string', default: '.tenantgate/dev', description: 'where kubeconfigs and certificates are written' },
  port: { type: 'string', default: '6443', description: 'port tenantgate listens on (127.0.0.1)' },
  'metrics-port': { type: 'string', default: '9464', description: "port of tenantgate's Prometheus /metrics listener (127.0.0.1; 0: any free port)" },
  passthrough: { type: 'boolean', default: false, description: 'forward without protocol conversion' },
  help: { type: 'boolean', short: 'h', default: false, description: 'show this help' },
} as const;

const RIG_OPTIONS = {
  help: { type: 'boolean', short: 'h', default: false, description: 'show this help' },
} as const;

const USAGE = `tenantgate: multi-tenancy for Kubernetes by protocol conversion

Usage: tenantgate <command> [flags]

Commands:
  serve   run tenantgate in front of an upstream kube-apiserver
  dev     start a local etcd, kube-apiserver and kube-controller-manager with tenantgate in front
  tenant  create, get, list or delete tenants, and issue their kubeconfigs (talks to a running tenantgate)
  rig     build (or reuse) etcd, kube-apiserver, kube-controller-manager and kubectl, and print their paths

Run 'tenantgate <command> --help' for a command's flags.
`;

async function serve(args: string[]): Promise<void> {
  const config = parseServeConfig(args);
  if (config === 'help') {
    process.stdout.write(`Usage: tenantgate serve [flags]\n\n${describeOptions(SERVE_OPTIONS, true)}\n`);
    return;
  }
  const gateway = await startGateway(config);
  // Before 'tenantgate serving': whoever waits for that line finds the metrics address already logged.
  if (gateway.metricsUrl !== null) log.info('tenantgate metrics', { url: gateway.metricsUrl });
  log.info('tenantgate serving', { url: gateway.url, upstream: config.upstream.server, passthrough: config.passthrough });
  // --shutdown-delay and --shutdown-drain (a config made elsewhere may have none: the flags' defaults).
  const times = config.shutdown ?? DEFAULT_SHUTDOWN_TIMES;
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      // A second signal (Ctrl-C again): no more waiting.
      log.info('stopping now', { signal });
      void gateway.close().then(() => process.exit(0));
      return;
    }
    stopping = true;
    log.info('stopping', { signal });
    void gateway.shutdown(times).then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

async function dev(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: DEV_OPTIONS, strict: true });
  if (values.help) {
    process.stdout.write(`Usage: tenantgate dev [flags]\n\n${describeOptions(DEV_OPTIONS)}\n`);
    return;
  }
  await runDev({ dir: values.dir, port: Number(values.port), metricsPort: Number(values['metrics-port']), passthrough: values.passthrough });
}

async function rig(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: RIG_OPTIONS, strict: true });
  if (values.help) {
    process.stdout.write(
      `Usage: tenantgate rig\n\nBuilds the rig's binaries with go build (cached), then prints their paths.\n\n${describeOptions(RIG_OPTIONS)}\n`,
    );
    return;
  }
  const binaries = await ensureRigBinaries({ log: (line) => log.info(line) });
  process.stdout.write(JSON.stringify(binaries, null, 2) + '\n');
}

const COMMANDS: Record<string, (args: string[]) => Promise<void>> = { serve, dev, tenant: runTenantCommand, rig };

async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  const run = COMMANDS[command];
  if (run === undefined) {
    process.stderr.write(`tenantgate: unknown command ${command}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  await run(args);
}

main(process.argv.slice(2)).catch((error: Error) => {
  process.stderr.write(`tenantgate: ${error.message}\n`);
  process.exit(1);
});
