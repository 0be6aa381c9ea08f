// planShares: how a tenant's limit is split into its namespaces' shares. The sum of shares never passes the limit
// beyond what is already used; free capacity goes where creates were refused, else stays where it is.
import t from 'tap';
import { planShares, type Amounts, type Share } from '../../lib/tenants/tenant-quota.ts';

const G = 1_000_000_000n; // one unit, in nano-units
const amounts = (entries: Record<string, number>): Amounts => new Map(Object.entries(entries).map(([key, value]) => [key, BigInt(value) * G]));
const share = (namespace: string, spec: Record<string, number>, used: Record<string, number>, enforced = spec): Share => ({
  namespace,
  spec: amounts(spec),
  enforced: amounts(enforced),
  used: amounts(used),
});
const units = (plan: Map<string, Amounts>, key: string) => Object.fromEntries([...plan].map(([namespace, hard]) => [namespace, Number(hard.get(key)! / G)]));

t.test('a new tenant: all of the limit in its namespace default, nothing elsewhere', async (t) => {
  const plan = planShares(amounts({ pods: 4 }), [share('ab-default', { pods: 0 }, { pods: 0 }), share('ab-one', { pods: 0 }, { pods: 0 })], [], 'ab-default');
  t.same(units(plan, 'pods'), { 'ab-default': 4, 'ab-one': 0 });
});

t.test('a refused namespace gets the free capacity; the others keep what they use', async (t) => {
  const shares = [share('ab-default', { pods: 4 }, { pods: 1 }), share('ab-one', { pods: 0 }, { pods: 0 })];
  t.same(units(planShares(amounts({ pods: 4 }), shares, ['ab-one'], 'ab-default'), 'pods'), { 'ab-default': 1, 'ab-one': 3 });
});

t.test('several refused at once share the free capacity, the most recent taking the remainder', async (t) => {
  const shares = [share('ab-a', { pods: 0 }, { pods: 0 }), share('ab-b', { pods: 0 }, { pods: 0 }), share('ab-c', { pods: 2 }, { pods: 2 })];
  t.same(units(planShares(amounts({ pods: 7 }), shares, ['ab-b', 'ab-a'], 'ab-a'), 'pods'), { 'ab-a': 2, 'ab-b': 3, 'ab-c': 2 });
});

t.test('at the limit: nothing to give, every share is what it uses', async (t) => {
  const shares = [share('ab-a', { pods: 2 }, { pods: 2 }), share('ab-b', { pods: 2 }, { pods: 2 })];
  t.same(units(planShares(amounts({ pods: 4 }), shares, ['ab-a'], 'ab-a'), 'pods'), { 'ab-a': 2, 'ab-b': 2 });
});

t.test("a lowered limit takes back unused shares, others' before home's, never below use", async (t) => {
  const shares = [share('ab-default', { pods: 3 }, { pods: 1 }), share('ab-one', { pods: 5 }, { pods: 4 })];
  t.same(units(planShares(amounts({ pods: 6 }), shares, [], 'ab-default'), 'pods'), { 'ab-default': 2, 'ab-one': 4 }, 'ab-one gives back its 1 first');
  t.same(
    units(planShares(amounts({ pods: 2 }), shares, [], 'ab-default'), 'pods'),
    { 'ab-default': 1, 'ab-one': 4 },
    'below use: each keeps what it uses (new pods blocked)',
  );
});

t.test('a share still enforced above its spec (the lowering not yet in status) counts as held', async (t) => {
  const shares = [share('ab-default', { pods: 0 }, { pods: 0 }, { pods: 4 }), share('ab-one', { pods: 0 }, { pods: 0 })];
  t.same(units(planShares(amounts({ pods: 4 }), shares, [], 'ab-default'), 'pods'), { 'ab-default': 4, 'ab-one': 0 }, 'nothing given out twice');
});

t.test('every resource on its own; cpu in milli-units', async (t) => {
  const hard = new Map([
    ['requests.cpu', 1_500_000_000n],
    ['pods', 2n * G],
  ]);
  const shares: Share[] = [
    { namespace: 'ab-a', spec: new Map(), enforced: new Map(), used: new Map([['requests.cpu', 500_000_000n]]) },
    { namespace: 'ab-b', spec: new Map(), enforced: new Map(), used: new Map() },
  ];
  const plan = planShares(hard, shares, ['ab-b'], 'ab-a');
  t.equal(plan.get('ab-b')!.get('requests.cpu'), 1_000_000_000n, '1.5 cpu less the 500m used elsewhere');
  t.equal(plan.get('ab-a')!.get('requests.cpu'), 500_000_000n);
  t.equal(plan.get('ab-b')!.get('pods'), 2n * G);
});
