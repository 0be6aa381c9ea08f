// The YAML text gnostic keeps for vendor extensions, defaults and enums. Every expectation below is what go-yaml v3
// (v3.0.4, through gnostic-models' compiler.Marshal) wrote for the same JSON; goYaml was also compared with it on
// tens of thousands of generated values with awkward strings (quoting, dates, numbers, line breaks, Unicode).
import t from 'tap';
import { goYaml } from '../../lib/convert/go-yaml.ts';

const CASES: [unknown, string][] = [
  [[{ group: '', kind: 'Pod', version: 'v1' }], '- group: ""\n  kind: Pod\n  version: v1\n'],
  ['merge', 'merge\n'],
  ['retainKeys,strategic', 'retainKeys,strategic\n'],
  [['name'], '- name\n'],
  [true, 'true\n'],
  [{}, '{}\n'],
  [[], '[]\n'],
  [null, 'null\n'],
  [1.5, '1.5\n'],
  [{ rule: "self.name != 'x'", message: 'it\'s "x": no' }, "rule: self.name != 'x'\nmessage: 'it''s \"x\": no'\n"],
  ['multi\nline\n', '|\n    multi\n    line\n'],
  [' leading space', "' leading space'\n"],
  ['2024-01-01', '"2024-01-01"\n'],
  ['true', '"true"\n'],
  ['', '""\n'],
  ['a: b', "'a: b'\n"],
  ['- item', "'- item'\n"],
  ['#comment', "'#comment'\n"],
  ['tab\there', '"tab\\there"\n'],
  [
    { nested: { deep: ['a', { b: 'c' }, [1, [2]]] }, '': 'empty key', k: [] },
    'nested:\n    deep:\n        - a\n        - b: c\n        - - 1\n          - - 2\n"": empty key\nk: []\n',
  ],
  ['😀 emoji', '"\\U0001F600 emoji"\n'],
  ['été', 'été\n'],
];

t.test('JSON values are written as go-yaml writes them', async (t) => {
  for (const [value, yaml] of CASES) t.equal(goYaml(value), yaml, JSON.stringify(value));
});

t.test('what JSON.stringify leaves out of objects is left out, and a lone surrogate becomes U+FFFD', async (t) => {
  t.equal(goYaml({ a: undefined, b: 1 }), 'b: 1\n');
  t.equal(goYaml([undefined]), '- null\n');
  t.equal(goYaml('\ud800x'), '\ufffdx\n');
});
