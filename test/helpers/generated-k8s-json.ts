// Generated Kubernetes-like JSON for differential fuzz tests of the tenant-view rewriter: objects with traps for the
// tenant check (other tenants' prefixes, decoy keys, escapes, unicode), written with random key order and whitespace.
import { seededRandom } from '../../bench/k8s-payloads.ts';

const MUTATION_BYTES = Buffer.from('"{}[],:\\ \n0123456789-+.eEtrufalsn\u0000x');

/** The tenant the generated objects are (mostly) of. */
export const TENANT = 'abc123';

/** A generator seeded with `seed`: the same seed gives the same values in the same order. */
export function k8sJsonGenerator(seed: number) {
  const random = seededRandom(seed);
  const int = (n: number) => Math.floor(random() * n);
  const chance = (p: number) => random() < p;
  const pick = <T>(values: readonly T[]): T => values[int(values.length)]!;
  function shuffle<T>(values: T[]): T[] {
    for (let i = values.length - 1; i > 0; i--) {
      const j = int(i + 1);
      [values[i], values[j]] = [values[j]!, values[i]!];
    }
    return values;
  }

  const CHAR_POOL = [
    ...'abcdefghijklmnopqrstuvwxyz0123456789-._/:',
    '"',
    '\\',
    '{',
    '}',
    '[',
    ']',
    ',',
    ' ',
    '\n',
    '\t',
    '\r',
    '\b',
    '\f',
    '\u0000',
    '\u001f',
    '\u007f',
    'é',
    '€',
    'ß',
    '日',
    '本',
    '😀',
    '𝄞',
    '\u2028',
    '\ud800',
    '\udfff',
  ];

  function randomText(max = 12): string {
    let out = '';
    for (let i = int(max + 1); i > 0; i--) out += pick(CHAR_POOL);
    return out;
  }

  /** A name-ish value for metadata.namespace / metadata.name: mostly the tenant's, some traps. */
  function randomUpstreamName(): unknown {
    const tail = chance(0.7) ? pick(['default', 'kube-system', 'team-a', 'x']) : randomText(6);
    if (chance(0.5)) return `${TENANT}-${tail}`;
    return pick<() => unknown>([
      () => `zzz999-${tail}`,
      () => `${TENANT}${tail}`,
      () => `${TENANT}-`,
      () => TENANT,
      () => `abc1234-${tail}`,
      () => tail,
      () => null,
      () => 42,
      () => ({ value: `${TENANT}-${tail}` }),
    ])();
  }

  function randomValue(depth: number): unknown {
    const kind = depth > 3 ? int(6) : int(9);
    switch (kind) {
      case 0:
      case 1:
        return randomText();
      case 2:
        return chance(0.5) ? int(1000) - 500 : Number((random() * 1e6 - 5e5).toFixed(int(5)));
      case 3:
        return pick([true, false, null]);
      case 4:
        // Escaped JSON with decoy keys, like kubectl's last-applied-configuration.
        return JSON.stringify({ metadata: { namespace: randomUpstreamName(), name: randomUpstreamName() } });
      case 5:
        return pick(['namespace', 'metadata', 'name', `${TENANT}-default`, '']);
      case 6:
        return Array.from({ length: int(4) }, () => randomValue(depth + 1));
      default:
        return randomObject(depth + 1);
    }
  }

  function randomObject(depth: number): Record<string, unknown> {
    const object: Record<string, unknown> = {};
    for (let i = int(5); i > 0; i--) {
      const key = chance(0.3) ? pick(['metadata', 'namespace', 'name', 'spec', 'template', 'items', 'type', 'object']) : randomText(6);
      object[key] = randomValue(depth);
    }
    return object;
  }

  /** Labels as upstream holds them: usually the tenant label, sometimes another tenant's, a bad value, or none. */
  function randomLabels(): unknown {
    const labels: Record<string, unknown> = {};
    if (chance(0.5)) labels.app = randomText();
    const tenantLabel = pick<() => unknown>([() => TENANT, () => TENANT, () => TENANT, () => 'zzz999', () => null, () => 7, () => undefined]);
    const value = tenantLabel();
    if (value !== undefined) labels['kubezoo.io/tenant'] = value;
    if (chance(0.3)) labels[pick(['tier', 'kubezoo.io/tenantx', 'a.kubezoo.io/tenant'])] = randomText(4);
    return chance(0.95) ? Object.fromEntries(shuffle(Object.entries(labels))) : pick([null, ['x'], 'labels']);
  }

  /** A field set: the tenant label's field at random depths, beside other fields or alone (so sets empty out). */
  function randomFieldSet(depth: number): Record<string, unknown> {
    const set: Record<string, unknown> = {};
    for (let i = int(3); i >= 0; i--) {
      const roll = int(6);
      if (roll === 0) set['f:kubezoo.io/tenant'] = {};
      else if (roll === 1 && depth < 3) set[pick(['f:metadata', 'f:labels', 'f:spec', 'f:template'])] = randomFieldSet(depth + 1);
      else if (roll === 2) set[`k:{"name":"${randomText(3)}"}`] = chance(0.5) ? {} : { 'f:kubezoo.io/tenant': {} };
      else set[pick(['f:data', '.', 'f:app', 'f:note'])] = {};
    }
    return set;
  }

  function randomManagedFields(): unknown {
    return Array.from({ length: int(3) + 1 }, () => {
      const entry: Record<string, unknown> = { manager: pick(['kubectl', 'kube-controller-manager', '"f:kubezoo.io/tenant":{}']), operation: 'Update' };
      // Upstream writes the object's own version here: built-in for the kinds the fast path takes (another tenant's
      // custom group stays as it is either way; the tenant's own would be un-prefixed only by the rule).
      entry.apiVersion = pick(['v1', 'apps/v1', 'zzz999-example.com/v1']);
      entry.fieldsType = 'FieldsV1';
      entry.fieldsV1 = chance(0.9)
        ? { 'f:metadata': { 'f:labels': { 'f:kubezoo.io/tenant': {}, ...(chance(0.5) ? { 'f:app': {} } : {}) } }, ...randomFieldSet(0) }
        : randomFieldSet(0);
      return entry;
    });
  }

  function randomOwnerReferences(): unknown {
    return Array.from({ length: int(3) }, () =>
      pick<() => unknown>([
        () => ({ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `web-${randomText(4)}`, uid: 'u', controller: true }),
        () => ({ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner' }),
        () => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: pick([`${TENANT}-reader`, 'zzz999-reader']) }),
        () => ({ apiVersion: pick([`${TENANT}-example.com/v1`, 'zzz999-example.com/v1']), kind: 'Widget', name: 'w' }),
        () => 'not an owner',
      ])(),
    );
  }

  /** Status conditions whose messages may name the tenant's objects under their upstream names. */
  function randomStatus(): Record<string, unknown> {
    const status = randomObject(2);
    if (chance(0.3)) status.conditions = [{ type: 'Ready', message: pick([`pod ${TENANT}-team/x is ready`, 'all good', `group ${TENANT}:devs`]) }];
    return status;
  }

  function randomItem(): unknown {
    if (chance(0.04)) return randomValue(3); // not even an object
    const metadata: Record<string, unknown> = {};
    const fields: [string, () => unknown][] = [
      ['namespace', randomUpstreamName],
      ['name', randomUpstreamName],
      ['labels', randomLabels],
      ['managedFields', () => (chance(0.9) ? randomManagedFields() : randomValue(2))],
      ['ownerReferences', () => (chance(0.9) ? randomOwnerReferences() : randomValue(2))],
      ['annotations', () => ({ 'kubectl.kubernetes.io/last-applied-configuration': randomValue(4), note: randomText() })],
      ['resourceVersion', () => String(int(1e6))],
      ['template', () => ({ metadata: { namespace: `zzz999-x` } })],
    ];
    for (const [key, make] of shuffle(fields)) if (chance(0.85)) metadata[key] = make();
    const entries: [string, unknown][] = [
      ['apiVersion', 'v1'],
      ['kind', pick(['Pod', 'ConfigMap', 'Namespace'])],
      [
        'spec',
        {
          template: { metadata: { namespace: randomUpstreamName() } },
          containers: [randomObject(2)],
          ...(chance(0.1) ? { affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ namespaces: [`${TENANT}-team`] }] } } } : {}),
        },
      ],
      ['status', randomStatus()],
      ['data', randomObject(2)],
    ];
    if (chance(0.95)) entries.push(['metadata', chance(0.95) ? metadata : randomValue(3)]);
    const item: Record<string, unknown> = {};
    for (const [key, value] of shuffle(entries)) if (key === 'metadata' || chance(0.8)) item[key] = value;
    return item;
  }

  /**
   * JSON with random whitespace, escapes of any character, and number spellings JSON allows. `asGo`: only the
   * escapes Go's encoder writes, as kube-apiserver's answers have (the fast path's markers rely on it), and little space
   * (`spaceRate`: the share of places that get some anyway).
   */
  function write(value: unknown, newlines: boolean, asGo = false, spaceRate = asGo ? 0.01 : 0.1): string {
    const space = () => (chance(1 - spaceRate) ? '' : pick(newlines ? [' ', '\t', '\n', '\r\n', '  '] : [' ', '\t']));
    const string = (s: string) => {
      let out = '"';
      for (const ch of s) {
        const code = ch.codePointAt(0)!;
        const short: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\t': '\\t', '\r': '\\r', '\b': '\\b', '\f': '\\f' };
        const isLoneSurrogate = code >= 0xd800 && code <= 0xdfff;
        if (short[ch] !== undefined && chance(0.8)) out += short[ch];
        else if (code < 0x20 || ch === '"' || ch === '\\' || isLoneSurrogate || (!asGo && chance(0.05))) {
          for (let i = 0; i < ch.length; i++) out += '\\u' + ch.charCodeAt(i).toString(16).padStart(4, '0')[chance(0.5) ? 'toUpperCase' : 'toLowerCase']();
        } else if (ch === '/' && !asGo && chance(0.5)) out += '\\/';
        else out += ch;
      }
      return out + '"';
    };
    const number = (n: number) => {
      if (!Number.isInteger(n) || chance(0.7)) return String(n);
      return pick([`${n}e0`, `${n}E+0`, `${n}.0`, `${n * 10}e-1`]);
    };
    const go = (v: unknown): string => {
      if (v === null || typeof v === 'boolean') return String(v);
      if (typeof v === 'number') return number(v);
      if (typeof v === 'string') return string(v);
      if (Array.isArray(v)) return '[' + space() + v.map((x) => go(x)).join(space() + ',' + space()) + space() + ']';
      const entries = Object.entries(v as object).map(([k, x]) => string(k) + space() + ':' + space() + go(x));
      return '{' + space() + entries.join(space() + ',' + space()) + space() + '}';
    };
    return space() + go(value) + space();
  }

  function randomList(maxItems: number, asGo = false): string {
    const envelope: [string, unknown][] = shuffle([
      ['kind', 'PodList'],
      ['apiVersion', 'v1'],
      ['metadata', { resourceVersion: String(int(1e6)), continue: chance(0.3) ? randomText() : '', remainingItemCount: int(50) }],
      ['items', chance(0.03) ? null : Array.from({ length: int(maxItems + 1) }, randomItem)],
    ]);
    return write(Object.fromEntries(envelope), true, asGo);
  }

  function randomWatch(maxEvents: number, asGo = false): string {
    const events: string[] = [];
    for (let i = int(maxEvents + 1); i > 0; i--) {
      const type = pick(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);
      let object: unknown = randomItem();
      if (type === 'BOOKMARK') {
        const metadata: Record<string, unknown> = { resourceVersion: String(int(1e6)), annotations: { 'k8s.io/initial-events-end': 'true' } };
        if (chance(0.2)) metadata[pick(['namespace', 'name'])] = randomUpstreamName(); // never from kube-apiserver; checked if so
        object = { kind: 'Pod', metadata };
      }
      if (type === 'ERROR') object = { kind: 'Status', status: 'Failure', message: `${TENANT}-x: ${randomText()}`, code: 410 };
      if (typeof object !== 'object' || object === null || Array.isArray(object)) object = { metadata: { namespace: randomUpstreamName() } };
      const entries: [string, unknown][] = shuffle([
        ['type', type],
        ['object', object],
      ]);
      events.push(write(Object.fromEntries(entries), false, asGo));
    }
    return events.join('\n') + (chance(0.5) ? '\n' : '');
  }

  /** One random mutation of valid JSON: a byte dropped, added or changed, a cut, a splice, a stray token. */
  function mutate(input: Buffer): Buffer {
    const at = int(input.length);
    switch (int(6)) {
      case 0:
        return Buffer.concat([input.subarray(0, at), input.subarray(at + 1)]);
      case 1:
        return Buffer.concat([
          input.subarray(0, at),
          Buffer.from([chance(0.9) ? MUTATION_BYTES[int(MUTATION_BYTES.length)]! : 0x80 + int(128)]),
          input.subarray(at),
        ]);
      case 2: {
        const copy = Buffer.from(input);
        copy[at] = MUTATION_BYTES[int(MUTATION_BYTES.length)]!;
        return copy;
      }
      case 3:
        return input.subarray(0, at);
      case 4: {
        const from = int(input.length);
        return Buffer.concat([input.subarray(0, at), input.subarray(from, from + int(20)), input.subarray(at)]);
      }
      default:
        return Buffer.concat([input.subarray(0, at), Buffer.from(pick(['"', '\\', '}', ']', '{"', '",', ':'])), input.subarray(at)]);
    }
  }

  return { random, mutate, int, chance, pick, shuffle, randomText, randomUpstreamName, randomValue, randomObject, randomItem, write, randomList, randomWatch };
}
