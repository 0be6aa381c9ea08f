// `npm run build && npx node bench/get-breakdown.ts [--requests N] [--rounds N]`: where a small GET's CPU goes, by ablation in one run
// on one rig — a bare TLS server, a bare proxy, tenantgate --passthrough, tenantgate converting, and that without
// metrics and request log — over HTTP/2 (h2load) and HTTP/1.1 (autocannon), plus a --cpu-prof run of tenantgate's
// GET path. Prints a table; writes bench/results/get-breakdown.json. Loopback only; every load is a fixed count.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { spawnGateway, startStack, stopChild } from '../test/helpers/stack.ts';
import { createTestTenant } from '../test/helpers/tenants.ts';
import { credentialsOf } from '../test/helpers/http.ts';
import { spawnBare } from './load/bare-server.ts';
import { cpuMeter, idleCpuRate, CPU_TICK_MS } from './load/cpu.ts';
import { http1Load } from './load/http1.ts';
import { H2LOAD_INSTALL, h2loadAvailable, http2Load } from './load/http2.ts';
import { profilesIn, readProfile, topSelfTime, type CpuProfile } from './profile.ts';
import { CONFIGMAP, tenantToken, waitUntilServed } from './scenarios/small-get.ts';
import { median, rounded } from './stats.ts';

const TENANT = 'bbrk01';
const RESULTS_FILE = fileURLToPath(new URL('./results/get-breakdown.json', import.meta.url));
const HTTP1_CONNECTIONS = 8;
const HTTP2_STREAMS = 8;
const PROFILE_TOP = 25;

type Protocol = 'http2' | 'http1';

interface Ablation {
  name: string;
  what: string;
  /** The process whose CPU is the proxy's. */
  pid: number;
  url: string;
  protocols: Protocol[];
}

interface Row {
  ablation: string;
  protocol: Protocol;
  proxyCpuMsPerRequest: number;
  apiserverCpuMsPerRequest: number;
  requestsPerSecond: number;
}

/** Self time summed per script (node internals by module), to tell TLS, HTTP/2 framing and our own code apart. */
function selfTimeByFile(profile: CpuProfile, count: number): { file: string; selfMs: number; percent: number }[] {
  const fileOf = new Map<number, string>();
  for (const node of profile.nodes) {
    const { url, functionName } = node.callFrame;
    fileOf.set(node.id, url === '' ? `(${functionName === '' ? 'native' : functionName})` : url.replace(/^file:\/\/.*\/(lib|node_modules)\//, '$1/'));
  }
  const selfUs = new Map<string, number>();
  let totalUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i + 1] ?? 0;
    const file = fileOf.get(profile.samples[i]!) ?? '(unknown)';
    selfUs.set(file, (selfUs.get(file) ?? 0) + delta);
    totalUs += delta;
  }
  return [...selfUs.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([file, us]) => ({ file, selfMs: Math.round(us / 100) / 10, percent: Math.round((us / totalUs) * 1000) / 10 }));
}

/** A profile node's children too: who called a native function (writeUtf8String, say) is in the tree, not in the row. */
type ProfileTree = CpuProfile & { nodes: (CpuProfile['nodes'][number] & { children?: number[] })[] };

/** For a function of the profile, its nearest callers outside Node's internals, by the self time spent in it under each, ms. */
function callersOf(profile: ProfileTree, functionName: string, count: number): { caller: string; selfMs: number }[] {
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<string, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i]!);
    if (node?.callFrame.functionName !== functionName) continue;
    // Up through Node's own internals to the first frame of a script of ours (or a dependency's).
    let parent = byId.get(parentOf.get(node.id) ?? -1);
    while (parent !== undefined && (parent.callFrame.url === '' || parent.callFrame.url.startsWith('node:'))) parent = byId.get(parentOf.get(parent.id) ?? -1);
    const frame = parent?.callFrame;
    const caller =
      frame === undefined ? '(root)' : `${frame.functionName || '(anonymous)'} (${frame.url.split('/').slice(-2).join('/')}:${frame.lineNumber + 1})`;
    selfUs.set(caller, (selfUs.get(caller) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
  }
  return [...selfUs.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([caller, us]) => ({ caller, selfMs: Math.round(us / 100) / 10 }));
}

/** Rows without the time the process sat idle, percent of the busy time: what a request costs, not what waiting does. */
function busyOnly<T extends { selfMs: number; percent: number; location?: string; file?: string }>(rows: T[]): T[] {
  const busy = rows.filter((row) => (row.location ?? row.file) !== '(idle)' && (row.location ?? row.file) !== '((idle))');
  const totalMs = busy.reduce((sum, row) => sum + row.selfMs, 0);
  return busy.map((row) => ({ ...row, percent: totalMs === 0 ? 0 : rounded((row.selfMs / totalMs) * 100, 1) }));
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { requests: { type: 'string', default: '5000' }, rounds: { type: 'string', default: '3' }, only: { type: 'string' } },
  });
  // `--only d,e,f`: the ablations whose names start with these (direct always), to look at a few closely.
  const only = values.only?.split(',').map((prefix) => prefix.trim()) ?? null;
  const requests = Number(values.requests);
  const rounds = Number(values.rounds);
  if (!Number.isInteger(requests) || requests < 100 || requests > 200_000) throw new Error('--requests must be an integer from 100 to 200000');
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 10) throw new Error('--rounds must be an integer from 1 to 10');
  if (!h2loadAvailable()) throw new Error(`h2load is missing; install it with: ${H2LOAD_INSTALL}`);

  const stack = await startStack({ controllers: false });
  const children: ChildProcess[] = [];
  const profileDir = mkdtempSync(join(tmpdir(), 'tenantgate-breakdown-prof-'));
  try {
    const tenant = await createTestTenant(stack, TENANT);
    const upstreamPath = `/api/v1/namespaces/${TENANT}-default/configmaps/${CONFIGMAP}`;
    const tenantPath = `/api/v1/namespaces/default/configmaps/${CONFIGMAP}`;
    const token = await tenantToken(credentialsOf(tenant.kubeconfig));
    const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };
    const files = stack.files;
    const bare = async (mode: string, proxy: boolean) => {
      const started = await spawnBare(mode, [files.tlsCertFile, files.tlsKeyFile, ...(proxy ? [files.upstreamKubeconfigPath] : [])]);
      children.push(started.child);
      return started;
    };
    const gateway = async (args: string[], nodeFlags: string[] = []) => {
      const started = await spawnGateway(files, args, nodeFlags);
      children.push(started.child);
      return started;
    };
    const converting = ['--confine-upstream-discovery'];
    const quiet = ['--metrics-listen', '', '--request-log-level', 'debug'];
    const staticCompat = await bare('static-compat', false);
    const staticStream = await bare('static-stream', false);
    const proxyCompat = await bare('proxy-compat', true);
    const proxyStream = await bare('proxy-stream', true);
    const passthrough = await gateway(['--passthrough']);
    const tenantgate = await gateway(converting);
    const tenantgateQuiet = await gateway([...converting, ...quiet]);
    const tenantgateUnlogged = await gateway([...converting, '--request-log-level', 'debug']);
    const apiserverPid = stack.rig.processes.find((p) => p.name === 'kube-apiserver')!.pid;
    const both: Protocol[] = ['http2', 'http1'];
    const allAblations: Ablation[] = [
      {
        name: 'direct',
        what: 'kube-apiserver itself (its CPU is the "proxy" column)',
        pid: apiserverPid,
        url: `${stack.rig.server}${upstreamPath}`,
        protocols: both,
      },
      {
        name: 'a1 bare TLS static, compat API',
        what: 'TLS in + HTTP framing, fixed body, Http2ServerRequest/Response',
        pid: staticCompat.child.pid!,
        url: `${staticCompat.url}${upstreamPath}`,
        protocols: both,
      },
      {
        name: 'a2 bare TLS static, raw stream',
        what: 'TLS in + HTTP/2 framing, fixed body, session stream event',
        pid: staticStream.child.pid!,
        url: `${staticStream.url}${upstreamPath}`,
        protocols: ['http2'],
      },
      {
        name: 'b1 bare proxy, compat API',
        what: 'a1 + one pooled upstream HTTP/2 session (TLS out), no stages',
        pid: proxyCompat.child.pid!,
        url: `${proxyCompat.url}${upstreamPath}`,
        protocols: both,
      },
      {
        name: 'b2 bare proxy, raw stream',
        what: 'a2 + one pooled upstream HTTP/2 session (TLS out), no stages',
        pid: proxyStream.child.pid!,
        url: `${proxyStream.url}${upstreamPath}`,
        protocols: ['http2'],
      },
      {
        name: 'c tenantgate --passthrough',
        what: 'tenantgate, conversion off',
        pid: passthrough.child.pid!,
        url: `${passthrough.url}${upstreamPath}`,
        protocols: both,
      },
      {
        name: 'd tenantgate converting',
        what: 'tenantgate as the tenant, metrics and request log on',
        pid: tenantgate.child.pid!,
        url: `${tenantgate.url}${tenantPath}`,
        protocols: both,
      },
      {
        name: 'e (d), metrics + request log off',
        what: "--metrics-listen '' --request-log-level debug",
        pid: tenantgateQuiet.child.pid!,
        url: `${tenantgateQuiet.url}${tenantPath}`,
        protocols: both,
      },
      {
        name: 'f (d), request log off',
        what: '--request-log-level debug (metrics on)',
        pid: tenantgateUnlogged.child.pid!,
        url: `${tenantgateUnlogged.url}${tenantPath}`,
        protocols: both,
      },
    ];
    const ablations = allAblations.filter((a) => only === null || a.name === 'direct' || only.some((prefix) => a.name.startsWith(`${prefix} `)));
    // The token's RBAC settles within moments: each server must answer 200 before anything is measured (asked over
    // HTTP/1.1; the raw-stream servers speak only HTTP/2 and answer without RBAC anyway).
    const upstreamCredentials = credentialsOf(stack.upstreamKubeconfig);
    for (const ablation of ablations.filter((a) => a.protocols.includes('http1'))) {
      const { origin, pathname } = new URL(ablation.url);
      const namespacePath = pathname.slice(0, -`/configmaps/${CONFIGMAP}`.length);
      await waitUntilServed({ name: 'direct', credentials: { ...upstreamCredentials, server: origin }, namespacePath }, headers);
    }
    const pids = { apiserver: apiserverPid, ...Object.fromEntries(ablations.map((a) => [a.name, a.pid])) };
    const idle = await idleCpuRate(pids, 3);
    const load = (protocol: Protocol, url: string, count: number) =>
      protocol === 'http2'
        ? http2Load({ url, headers, connections: 1, streams: HTTP2_STREAMS, seconds: 120, requests: count })
        : http1Load({ url, headers, connections: HTTP1_CONNECTIONS, seconds: 120, amount: count });
    // Warm-up (JIT, TLS sessions, caches) for every ablation and protocol, then rounds interleaved so drift hits all alike.
    for (const ablation of ablations) for (const protocol of ablation.protocols) await load(protocol, ablation.url, Math.min(1000, requests));
    const measured = new Map<string, { proxy: number[]; apiserver: number[]; rps: number[] }>();
    for (let round = 0; round < rounds; round++) {
      for (const ablation of ablations) {
        for (const protocol of ablation.protocols) {
          const spent = cpuMeter(pids, idle);
          const run = await load(protocol, ablation.url, requests);
          const { ms } = spent();
          if (run.non2xx > 0) throw new Error(`${ablation.name} ${protocol}: ${run.non2xx} answers not 2xx`);
          const key = `${ablation.name}\t${protocol}`;
          const entry = measured.get(key) ?? { proxy: [], apiserver: [], rps: [] };
          entry.proxy.push(ms[ablation.name]! / requests);
          entry.apiserver.push(ms.apiserver! / requests);
          entry.rps.push(run.requestsPerSecond);
          measured.set(key, entry);
          console.error(`round ${round + 1} ${ablation.name} ${protocol}: proxy ${rounded(ms[ablation.name]! / requests, 4)} ms/request`);
        }
      }
    }
    const rows: Row[] = [...measured.entries()].map(([key, entry]) => {
      const [ablation, protocol] = key.split('\t') as [string, Protocol];
      return {
        ablation,
        protocol,
        proxyCpuMsPerRequest: rounded(median(entry.proxy), 4),
        apiserverCpuMsPerRequest: rounded(median(entry.apiserver), 4),
        requestsPerSecond: Math.round(median(entry.rps)),
      };
    });

    // Latency added by each, one request at a time over HTTP/2 (nothing queued): the p50 of a fixed count.
    const oneAtATimeP50 = new Map<string, number>();
    for (const ablation of ablations.filter((a) => a.protocols.includes('http2'))) {
      const run = await http2Load({ url: ablation.url, headers, connections: 1, streams: 1, seconds: 120, requests: Math.min(2000, requests) });
      oneAtATimeP50.set(ablation.name, rounded(median(run.latenciesMs), 3));
    }

    // The profile: one more converting tenantgate under --cpu-prof, the same HTTP/2 load, then stopped so it writes.
    const profiled = await gateway(converting, ['--cpu-prof', '--cpu-prof-dir', profileDir]);
    await load('http2', `${profiled.url}${tenantPath}`, Math.min(1000, requests));
    await load('http2', `${profiled.url}${tenantPath}`, requests * 2);
    await stopChild(profiled.child);
    const profileFile = profilesIn(profileDir).at(-1);
    const profile = profileFile === undefined ? null : readProfile(profileFile);
    const top = profile === null ? [] : busyOnly(topSelfTime(profile, Number.MAX_SAFE_INTEGER)).slice(0, PROFILE_TOP);
    const byFile = profile === null ? [] : busyOnly(selfTimeByFile(profile, Number.MAX_SAFE_INTEGER)).slice(0, 15);
    // The top functions without a script of their own (native): which of ours called them.
    const nativeCallers = top
      .filter((row) => !row.location.includes('(') && !row.location.startsWith('('))
      .slice(0, 3)
      .map((row) => ({ function: row.location, callers: callersOf(profile as ProfileTree, row.location, 5) }));

    const lines: string[] = [];
    lines.push(
      `Small GET (ConfigMap ${CONFIGMAP}) CPU per request, ${requests} requests per cell, median of ${rounds} rounds; /proc utime+stime (${CPU_TICK_MS} ms ticks), idle rate taken off.`,
    );
    lines.push(
      `HTTP/2: h2load, 1 connection x ${HTTP2_STREAMS} streams; HTTP/1.1: autocannon, ${HTTP1_CONNECTIONS} connections. Bearer token of a tenant service account.`,
    );
    lines.push('');
    lines.push('| ablation | protocol | proxy CPU ms/req | kube-apiserver CPU ms/req | proxy / apiserver | requests/s (fixed count, setup included) |');
    lines.push('|---|---|---|---|---|---|');
    for (const row of rows) {
      const ratio = row.ablation === 'direct' ? '' : String(rounded(row.proxyCpuMsPerRequest / Math.max(row.apiserverCpuMsPerRequest, 1e-9), 2));
      lines.push(
        `| ${row.ablation} | ${row.protocol} | ${row.proxyCpuMsPerRequest} | ${row.ablation.startsWith('a') ? '-' : row.apiserverCpuMsPerRequest} | ${row.ablation.startsWith('a') ? '-' : ratio} | ${row.requestsPerSecond} |`,
      );
    }
    // (By the name's first word: "d" is not "direct".)
    const cell = (ablation: string, protocol: Protocol) =>
      rows.find((r) => r.ablation.startsWith(`${ablation} `) && r.protocol === protocol)?.proxyCpuMsPerRequest ?? NaN;
    lines.push('');
    lines.push('One request at a time over HTTP/2, p50 ms (added over direct):');
    const directP50 = oneAtATimeP50.get('direct') ?? NaN;
    for (const [name, p50] of oneAtATimeP50) lines.push(`- ${name}: ${p50}${name === 'direct' ? '' : ` (+${rounded(p50 - directP50, 3)})`}`);
    lines.push('');
    lines.push('Differences (HTTP/2 | HTTP/1.1), ms per request:');
    const diff = (label: string, from: string, to: string) =>
      lines.push(`- ${label}: ${rounded(cell(to, 'http2') - cell(from, 'http2'), 4)} | ${rounded(cell(to, 'http1') - cell(from, 'http1'), 4)}`);
    lines.push(
      `- TLS in + framing, fixed body (a1 compat | a2 raw, HTTP/2): ${cell('a1', 'http2')} | ${cell('a2', 'http2')}; HTTP/1.1 a1: ${cell('a1', 'http1')}`,
    );
    lines.push(
      `- compat API over raw stream, HTTP/2 (a1 - a2): ${rounded(cell('a1', 'http2') - cell('a2', 'http2'), 4)}; (b1 - b2): ${rounded(cell('b1', 'http2') - cell('b2', 'http2'), 4)}`,
    );
    diff('upstream hop, TLS out + pooled session (b1 - a1)', 'a1', 'b1');
    lines.push(`- upstream hop, raw streams (b2 - a2), HTTP/2: ${rounded(cell('b2', 'http2') - cell('a2', 'http2'), 4)}`);
    diff("tenantgate's pass-through path beyond a bare proxy (c - b1)", 'b1', 'c');
    diff('conversion, auth, tenant stages (d - c)', 'c', 'd');
    diff('metrics + request log (d - e)', 'e', 'd');
    diff('request log alone (d - f)', 'f', 'd');
    lines.push('');
    lines.push(
      `CPU profile of (d), HTTP/2, ${requests * 2} GETs (${profileFile ?? 'none written'}): top ${PROFILE_TOP} functions by self time, percent of busy (non-idle) time; startup included`,
    );
    for (const row of top) lines.push(`  ${String(row.selfMs).padStart(9)} ms ${String(row.percent).padStart(5)} %  ${row.location}`);
    lines.push('Self time by script:');
    for (const row of byFile) lines.push(`  ${String(row.selfMs).padStart(9)} ms ${String(row.percent).padStart(5)} %  ${row.file}`);
    for (const native of nativeCallers) {
      lines.push(`Callers of ${native.function} (its self time under each):`);
      for (const row of native.callers) lines.push(`  ${String(row.selfMs).padStart(9)} ms  ${row.caller}`);
    }
    console.log(lines.join('\n'));
    mkdirSync(join(RESULTS_FILE, '..'), { recursive: true });
    writeFileSync(
      RESULTS_FILE,
      JSON.stringify(
        {
          when: new Date().toISOString(),
          requests,
          rounds,
          idleCpuMsPerSecond: idle,
          ablations,
          rows,
          oneAtATimeP50Ms: Object.fromEntries(oneAtATimeP50),
          profile: { top, byFile, nativeCallers },
        },
        null,
        2,
      ) + '\n',
    );
  } finally {
    for (const child of children) await stopChild(child);
    await stack.stop();
    rmSync(profileDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
