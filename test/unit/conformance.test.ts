// The conformance runner's pure parts: which specs it selects, the focus that picks exactly one, the verdict it reads
// from Ginkgo's JUnit report, and the ratio (tenant-passed of the direct-passed).
import t from 'tap';
import { judgeJunit } from '../../conformance/run-spec.ts';
import { messageHead, renderJunit, summarize, type Row } from '../../conformance/report.ts';
import type { SpecResult } from '../../conformance/run-spec.ts';
import { focusFor, selectSpecs } from '../../conformance/specs.ts';

const WATCH = '[sig-api-machinery] Watchers should observe add, update, and delete watch notifications on configmaps [Conformance]';

t.test("selects the three SIGs' Conformance specs and sig-api-machinery's runnable others, Conformance first", async (t) => {
  const specs = selectSpecs([
    '[sig-storage] Volumes should work [Conformance]',
    '[sig-api-machinery] ServerSideApply should work for CRDs',
    '[sig-api-machinery] Namespaces [Serial] should delete fast enough',
    '[sig-api-machinery] Etcd failure [Disruptive] should recover',
    '[sig-api-machinery] Something [Feature:Foo] works',
    '[sig-api-machinery] Other [FeatureGate:Bar] [Alpha] works',
    '[sig-api-machinery] Streaming [FeatureGate:WatchList] [Beta] works',
    '[sig-cli] Kubectl client should run [Conformance]',
    WATCH,
    WATCH,
  ]);
  t.same(
    specs.map((s) => [s.set, s.serial, s.name]),
    [
      ['conformance', false, WATCH],
      ['conformance', false, '[sig-cli] Kubectl client should run [Conformance]'],
      ['apimachinery', true, '[sig-api-machinery] Namespaces [Serial] should delete fast enough'],
      ['apimachinery', false, '[sig-api-machinery] ServerSideApply should work for CRDs'],
      ['apimachinery', false, '[sig-api-machinery] Streaming [FeatureGate:WatchList] [Beta] works'],
    ],
  );
  t.same(
    selectSpecs([WATCH, '[sig-cli] Kubectl client should run [Conformance]'], /Watchers/).map((s) => s.name),
    [WATCH],
  );
});

t.test('the focus matches the spec after the suite description, and no spec whose name merely starts the same', async (t) => {
  const focus = new RegExp(focusFor(WATCH));
  t.ok(focus.test(`Kubernetes e2e suite ${WATCH}`));
  t.ok(focus.test(WATCH));
  t.notOk(focus.test(`Kubernetes e2e suite ${WATCH.replace(' [Conformance]', ' and more [Conformance]')}`));
  t.notOk(focus.test(`Kubernetes e2e suite ${WATCH} again`));
  t.notOk(new RegExp(focusFor('[sig-x] a.b (c)')).test('[sig-x] aXb (c)'), 'regex characters in a name are literal');
});

function junit(...cases: string[]): string {
  return `<?xml version="1.0"?><testsuites><testsuite name="Kubernetes e2e suite">${cases.join('')}</testsuite></testsuites>`;
}

t.test("reads the focused spec's verdict from a report that lists every spec", async (t) => {
  const others = '<testcase name="[It] [sig-storage] Other [sig-storage]" status="skipped"><skipped message="skipped"></skipped></testcase>';
  const suite = '<testcase name="[SynchronizedBeforeSuite]" status="passed"></testcase>';
  t.same(judgeJunit(junit(suite, others, `<testcase name="[It] ${WATCH} [sig-api-machinery, Conformance]" status="passed"></testcase>`), WATCH), {
    outcome: 'pass',
    message: '',
  });
  t.same(
    judgeJunit(
      junit(
        suite,
        `<testcase name="[It] ${WATCH}" status="failed"><failure message="expected &quot;a&quot; &lt;b&gt;" type="failed">detail</failure></testcase>`,
        others,
      ),
      WATCH,
    ),
    { outcome: 'fail', message: 'expected "a" <b>' },
  );
  t.same(
    judgeJunit(
      junit(
        '<testcase name="[SynchronizedBeforeSuite]" status="failed"><failure message="Failed to get kubernetes service ClusterIP" type="failed"></failure></testcase>',
        `<testcase name="[It] ${WATCH}" status="skipped"><skipped message="skipped"></skipped></testcase>`,
      ),
      WATCH,
    ),
    { outcome: 'fail', message: '[SynchronizedBeforeSuite]: Failed to get kubernetes service ClusterIP' },
    'a failed BeforeSuite fails the spec it kept from running',
  );
  t.equal(judgeJunit(junit(suite, others), WATCH).outcome, 'fail', 'a report without the spec is a failure, not a skip');
  t.equal(judgeJunit(junit(`<testcase name="[It] ${WATCH} and more" status="passed"></testcase>`), WATCH).outcome, 'fail', 'a longer name is another spec');
});

const result = (outcome: SpecResult['outcome'], message = ''): SpecResult => ({ outcome, message, seconds: 3, logPath: '', junitPath: '' });

t.test("the ratio counts only the specs that passed directly; JUnit carries each column's outcomes", async (t) => {
  const spec = (name: string, set: 'conformance' | 'apimachinery' = 'conformance') => ({ name, set, serial: false });
  const rows: Row[] = [
    { spec: spec('a'), direct: result('pass'), tenant: result('pass') },
    { spec: spec('b'), direct: result('pass'), tenant: result('fail', '\n[FAILED]\nunsupported media type\nmore') },
    { spec: spec('c'), direct: result('no-nodes'), tenant: result('pass') },
    { spec: spec('d'), direct: result('fail') },
    { spec: spec('e', 'apimachinery'), direct: result('pass'), tenant: result('timeout') },
  ];
  t.match(summarize(rows, 'conformance'), { specs: 4, directPassed: 2, tenantPassed: 2, tenantPassedOfDirect: 1, ratio: 0.5 });
  t.match(summarize(rows, 'apimachinery'), { directPassed: 1, tenantPassedOfDirect: 0, ratio: 0 });
  t.equal(summarize([], 'apimachinery').ratio, null);
  t.equal(messageHead('\n[FAILED]\nunsupported media type\nmore'), 'unsupported media type');
  const xml = renderJunit(rows, 'tenant');
  t.match(xml, /<testsuite name="tenant: \[Conformance\][^"]*" tests="3" failures="1" skipped="0"/);
  t.match(xml, /<testcase name="b" classname="tenant" time="3.0">\s*<failure type="fail" message="unsupported media type">/);
  t.match(xml, /<testcase name="e" classname="tenant" time="3.0">\s*<failure type="timeout"/);
});
