// What a cached list or watch selects: the fields the cache keeps per kind, the requests it cannot judge (which go
// upstream), and the apiserver's matching rules for namespaces, field terms and label requirements.
import t from 'tap';
import { fieldsOf, selectionOf, selects, type Selectable } from '../../lib/watchcache/selection.ts';

const pod = (spec: any, status: any) => ({ kind: 'Pod', apiVersion: 'v1', metadata: { name: 'p', namespace: 'default' }, spec, status });

t.test("fieldsOf: the per-kind fields the apiserver selects on, read off the tenant's view", async (t) => {
  t.same(
    fieldsOf(
      '',
      'pods',
      pod(
        { nodeName: 'node-1', restartPolicy: 'Always', schedulerName: 'default-scheduler', serviceAccountName: 'sa', hostNetwork: true },
        { phase: 'Running', podIP: '10.0.0.1', podIPs: [{ ip: '10.0.0.1' }], nominatedNodeName: 'node-2' },
      ),
    ),
    {
      'spec.nodeName': 'node-1',
      'spec.restartPolicy': 'Always',
      'spec.schedulerName': 'default-scheduler',
      'spec.serviceAccountName': 'sa',
      'spec.hostNetwork': 'true',
      'status.phase': 'Running',
      'status.podIP': '10.0.0.1',
      'status.nominatedNodeName': 'node-2',
    },
  );
  const pending = fieldsOf('', 'pods', pod({}, {}))!;
  t.equal(pending['spec.nodeName'], '', 'an unscheduled pod: spec.nodeName is empty, as the apiserver matches `spec.nodeName=`');
  t.equal(pending['spec.hostNetwork'], 'false', 'hostNetwork defaults to false');
  t.equal(pending['status.phase'], '');
  t.equal(
    fieldsOf('', 'pods', pod({}, { podIPs: [{ ip: 'fd00::1' }, { ip: '10.0.0.9' }], podIP: 'fd00::1' }))!['status.podIP'],
    'fd00::1',
    'the first of podIPs',
  );
  t.same(fieldsOf('', 'secrets', { type: 'kubernetes.io/tls' }), { type: 'kubernetes.io/tls' });
  t.same(fieldsOf('', 'namespaces', { status: { phase: 'Terminating' } }), { 'status.phase': 'Terminating' });
  t.same(fieldsOf('apps', 'replicasets', { status: {} }), { 'status.replicas': '0' }, 'numbers as the apiserver prints them, 0 when unset');
  t.same(fieldsOf('batch', 'jobs', { status: { successful: 3 } }), { 'status.successful': '3' });
  const event = fieldsOf('', 'events', {
    involvedObject: { kind: 'Pod', namespace: 'default', name: 'p', uid: 'u', apiVersion: 'v1', resourceVersion: '7', fieldPath: 'spec' },
    reason: 'Started',
    reportingComponent: 'kubelet',
    source: { component: 'kubelet' },
    type: 'Normal',
  })!;
  t.equal(event['involvedObject.name'], 'p');
  t.equal(event.source, 'kubelet', 'source is source.component');
  t.equal(fieldsOf('', 'configmaps', { data: {} }), null, 'a kind with no fields beyond metadata keeps none');
  t.equal(fieldsOf('apps', 'deployments', {}), null);
});

t.test('selectionOf: what the cache can judge, and null for what it cannot (the request goes upstream)', async (t) => {
  const all = selectionOf('', 'configmaps', 'default', null, null)!;
  t.same(all, { namespace: 'default', across: null, labels: [], fields: [], everything: true, key: '["default","",""]' });
  t.equal(selectionOf('', 'configmaps', null, '', '')!.everything, true, 'empty selectors select everything');
  t.equal(selectionOf('', 'configmaps', null, 'app=x', null)!.everything, false, 'a selector: not everything (no remainingItemCount)');
  t.equal(selectionOf('', 'configmaps', null, null, 'metadata.name=x')!.everything, false);
  t.equal(selectionOf('', 'configmaps', null, 'app in (', null), null, 'a label selector that does not parse: upstream, whose 400 is the answer');
  t.equal(selectionOf('', 'configmaps', null, null, 'metadata.name'), null, 'a field selector that does not parse');
  for (const selector of ['kubezoo.io/tenant=abcdef', 'kubezoo.io/tenant', '!kubezoo.io/tenant', 'app=x,kubezoo.io/tenant notin (zyxwvu)']) {
    t.equal(selectionOf('', 'configmaps', null, selector, null), null, `the tenant label (${selector}): upstream, which refuses it`);
  }
  t.equal(selectionOf('', 'configmaps', null, null, 'data.key=x'), null, 'a field configmaps do not offer');
  t.equal(selectionOf('', 'configmaps', null, null, 'type=Opaque'), null, "a field of another kind (secrets') is not one of configmaps");
  t.equal(selectionOf('', 'pods', null, null, 'spec.containers=x'), null, 'a pod field the apiserver does not select on');
  t.ok(selectionOf('', 'secrets', null, null, 'type=Opaque'));
  t.ok(selectionOf('', 'pods', 'default', null, 'spec.nodeName=n,status.phase!=Running,metadata.name==p,metadata.namespace=default'));
  t.same(
    selectionOf('', 'pods', null, null, 'spec.nodeName=a\\,b')!.fields.map((f) => f.value),
    ['a,b'],
    'escaped values unescaped',
  );
});

t.test('selectionOf: metadata.namespace on a cluster-scoped kind', async (t) => {
  // The apiserver refuses it (400 field label not supported: metadata.namespace); the cache must not answer it.
  t.equal(selectionOf('', 'namespaces', null, null, 'metadata.namespace=foo', false), null, 'upstream');
  t.ok(selectionOf('', 'namespaces', null, null, 'metadata.name=foo'), "metadata.name is every kind's");
});

const object = (namespace: string, name: string, labels?: Record<string, string>, fields: Record<string, string> | null = null): Selectable => ({
  namespace,
  name,
  labels,
  fields,
});

t.test('selects: namespace, then every field term, then every label requirement', async (t) => {
  const inDefault = selectionOf('', 'configmaps', 'default', null, null)!;
  t.ok(selects(inDefault, object('default', 'a')));
  t.notOk(selects(inDefault, object('other', 'a')), 'another namespace');
  t.ok(selects(selectionOf('', 'configmaps', null, null, null)!, object('other', 'a')), 'all namespaces');

  const byName = selectionOf('', 'configmaps', null, null, 'metadata.name=a')!;
  t.ok(selects(byName, object('x', 'a')));
  t.notOk(selects(byName, object('x', 'b')));
  const notName = selectionOf('', 'configmaps', null, null, 'metadata.name!=a')!;
  t.notOk(selects(notName, object('x', 'a')));
  t.ok(selects(notName, object('x', 'b')));
  const byNamespace = selectionOf('', 'configmaps', null, null, 'metadata.namespace==x')!;
  t.ok(selects(byNamespace, object('x', 'a')));
  t.notOk(selects(byNamespace, object('y', 'a')));

  const scheduledPending = selectionOf('', 'pods', null, null, 'spec.nodeName=n1,status.phase=Pending')!;
  t.ok(selects(scheduledPending, object('d', 'p', undefined, { 'spec.nodeName': 'n1', 'status.phase': 'Pending' })));
  t.notOk(selects(scheduledPending, object('d', 'p', undefined, { 'spec.nodeName': 'n1', 'status.phase': 'Running' })), 'every term must hold');
  t.ok(
    selects(selectionOf('', 'pods', null, null, 'spec.nodeName=')!, object('d', 'p', undefined, { 'spec.nodeName': '' })),
    'the empty value selects unscheduled pods',
  );

  const labels = selectionOf('', 'configmaps', null, 'app in (a,b),!gone,tier!=db', null)!;
  t.ok(selects(labels, object('d', 'x', { app: 'a' })));
  t.ok(selects(labels, object('d', 'x', { app: 'b', tier: 'web' })));
  t.notOk(selects(labels, object('d', 'x', { app: 'c' })));
  t.notOk(selects(labels, object('d', 'x', { app: 'a', gone: '' })), '!gone: a label that exists, even empty, is excluded');
  t.notOk(selects(labels, object('d', 'x', { app: 'a', tier: 'db' })));
  t.notOk(selects(labels, object('d', 'x')), 'no labels at all: `in` cannot hold');
  t.ok(selects(selectionOf('', 'configmaps', null, 'app!=a', null)!, object('d', 'x')), "`!=` holds for an object without the label, as the apiserver's");
  t.ok(selects(selectionOf('', 'configmaps', null, 'n>3', null)!, object('d', 'x', { n: '4' })));
  t.notOk(selects(selectionOf('', 'configmaps', null, 'n>3', null)!, object('d', 'x', { n: '3' })));
  const both = selectionOf('', 'configmaps', 'd', 'app=a', 'metadata.name=x')!;
  t.ok(selects(both, object('d', 'x', { app: 'a' })));
  t.notOk(selects(both, object('d', 'y', { app: 'a' })), 'field and label selectors both hold');
  t.notOk(selects(both, object('d', 'x', { app: 'b' })));
});
