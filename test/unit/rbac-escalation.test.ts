// RBAC's escalation check as the apiserver compares rules (component-helpers policy_comparator.go): what a tenant's
// user may put in a ClusterRole, or bind, is what it holds at its cluster scope.
import t from 'tap';
import { breakdownRule, describeRule, FULL_AUTHORITY, ruleCovers, uncoveredRules } from '../../lib/auth/rbac-escalation.ts';

t.test('a rule breaks down into one rule per group, resource, verb and name, and per URL and verb', async (t) => {
  t.same(breakdownRule({ apiGroups: ['', 'apps'], resources: ['pods'], verbs: ['get', 'list'], resourceNames: ['a'] }), [
    { apiGroups: [''], resources: ['pods'], verbs: ['get'], resourceNames: ['a'] },
    { apiGroups: [''], resources: ['pods'], verbs: ['list'], resourceNames: ['a'] },
    { apiGroups: ['apps'], resources: ['pods'], verbs: ['get'], resourceNames: ['a'] },
    { apiGroups: ['apps'], resources: ['pods'], verbs: ['list'], resourceNames: ['a'] },
  ]);
  t.same(breakdownRule({ nonResourceURLs: ['/healthz', '/metrics'], verbs: ['get'] }), [
    { nonResourceURLs: ['/healthz'], verbs: ['get'] },
    { nonResourceURLs: ['/metrics'], verbs: ['get'] },
  ]);
});

t.test('what the owner holds covers the same, or less: wildcards only where the owner has them', async (t) => {
  const owner = [{ apiGroups: [''], resources: ['configmaps', 'pods/log'], verbs: ['get', 'list'] }];
  t.same(uncoveredRules(owner, [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }]), []);
  t.same(uncoveredRules(owner, [{ apiGroups: [''], resources: ['configmaps', 'secrets'], verbs: ['get', 'delete'] }]), [
    { apiGroups: [''], resources: ['configmaps'], verbs: ['delete'] },
    { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
    { apiGroups: [''], resources: ['secrets'], verbs: ['delete'] },
  ]);
  // A wildcard asked for is held only as a wildcard.
  t.same(uncoveredRules(owner, [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }]).length, 1);
  t.same(uncoveredRules(owner, [{ apiGroups: ['*'], resources: ['configmaps'], verbs: ['get'] }]).length, 1);
  // `*/log` held covers every resource's log; `*` covers every resource and subresource.
  t.ok(ruleCovers({ apiGroups: [''], resources: ['*/log'], verbs: ['get'] }, { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] }));
  t.notOk(ruleCovers({ apiGroups: [''], resources: ['*/log'], verbs: ['get'] }, { apiGroups: [''], resources: ['pods'], verbs: ['get'] }));
  t.ok(ruleCovers({ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }, { apiGroups: ['x.io'], resources: ['things/status'], verbs: ['patch'] }));
});

t.test('names: an owner limited to names covers only those names, never every name', async (t) => {
  const named = { apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames: ['a', 'b'] };
  t.ok(ruleCovers(named, { apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames: ['a'] }));
  t.notOk(ruleCovers(named, { apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames: ['c'] }));
  t.notOk(ruleCovers(named, { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }));
  t.ok(
    ruleCovers(
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames: ['c'] },
    ),
  );
});

t.test('non-resource URLs: a trailing `*` covers every path under it; a resource rule covers none', async (t) => {
  t.ok(ruleCovers({ nonResourceURLs: ['/metrics*'], verbs: ['get'] }, { nonResourceURLs: ['/metrics/slis'], verbs: ['get'] }));
  t.notOk(ruleCovers({ nonResourceURLs: ['/metrics'], verbs: ['get'] }, { nonResourceURLs: ['/healthz'], verbs: ['get'] }));
  t.notOk(ruleCovers({ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }, { nonResourceURLs: ['/healthz'], verbs: ['get'] }));
});

t.test('an aggregated role asks for everything: only full authority covers it', async (t) => {
  t.same(
    uncoveredRules(
      [
        { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
        { nonResourceURLs: ['*'], verbs: ['*'] },
      ],
      FULL_AUTHORITY,
    ),
    [],
  );
  t.equal(uncoveredRules([{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }], FULL_AUTHORITY).length, 1, 'without the URLs');
});

t.test('a missing rule reads as the apiserver lists it', async (t) => {
  t.equal(describeRule({ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }), '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}');
  t.equal(describeRule({ nonResourceURLs: ['/x'], verbs: ['get'] }), '{NonResourceURLs:["/x"], Verbs:["get"]}');
});
