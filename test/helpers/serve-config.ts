// `tenantgate serve`'s flags parsed as a command line gives them, beside the files every serve needs (stand-ins in a
// temporary directory of the test's). Only parses: never starts anything.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { parseServeConfig, type ServeConfig } from '../../lib/config.ts';
import { renderKubeconfig } from '../../lib/upstream/kubeconfig.ts';

/** A parser of `extra` serve flags after the required ones (serving certificate and key, client CA, upstream kubeconfig). */
export function serveFlagsParser(t: Test): (extra: string[]) => ServeConfig {
  const dir = mkdtempSync(join(tmpdir(), 'serve-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string) => (writeFileSync(join(dir, name), text), join(dir, name));
  const base = [
    `--tls-cert-file=${file('tls.crt', 'CERT')}`,
    `--tls-key-file=${file('tls.key', 'KEY')}`,
    `--client-ca-file=${file('ca.crt', 'CA')}`,
    `--upstream-kubeconfig=${file('upstream.kubeconfig', renderKubeconfig({ server: 'https://127.0.0.1:6443', caPem: 'CA', certPem: 'C', keyPem: 'K' }))}`,
  ];
  return (extra) => parseServeConfig([...base, ...extra]) as ServeConfig;
}
