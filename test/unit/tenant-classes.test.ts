// Which platform classes a Tenant allows: names listed, classes its label selector matches, and the namespace
// annotations the upstream's class policy reads; with nothing set, every class but the two critical priority classes.
import t from 'tap';
import { PLATFORM_CLASS_RESOURCES, platformClassHidden, refusePlatformPriorityClass } from '../../lib/convert/rules/platform-classes.ts';
import { allowedNames, classAnnotationsOf, priorityBandOf } from '../../lib/tenants/tenant-classes.ts';
import { PLATFORM_CLASS_FIELDS, type Tenant } from '../../lib/tenants/tenant.ts';
import type { StatusError } from '../../lib/errors/status-error.ts';
import { validateTenant } from '../../lib/tenants/validation.ts';
import { thrownStatus } from '../helpers/status-error.ts';

const tenantBody = { apiVersion: 'tenant.kubezoo.io/v1alpha1', kind: 'Tenant', metadata: { name: 'abc123' } };

const storage = new Map<string, Record<string, string>>([
  ['gold', { tier: 'gold', zone: 'a' }],
  ['silver', { tier: 'silver' }],
  ['bronze', {}],
]);

t.test('allowedNames: the names listed, and those the selector matches', async (t) => {
  t.same([...allowedNames({ allowed: ['bronze'] }, storage)], ['bronze']);
  t.same([...allowedNames({ selector: { matchLabels: { tier: 'gold' } } }, storage)], ['gold']);
  t.same([...allowedNames({ selector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['gold', 'silver'] }] } }, storage)].sort(), [
    'gold',
    'silver',
  ]);
  t.same([...allowedNames({ selector: { matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] } }, storage)], ['bronze']);
  t.same(
    [...allowedNames({ selector: { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['gold'] }] } }, storage)].sort(),
    ['bronze', 'silver'],
    'NotIn: no such label counts',
  );
  t.same([...allowedNames({ allowed: ['platinum'] }, storage)], ['platinum'], 'a name listed before its class exists');
  t.same([...allowedNames({}, storage)], [], 'an empty allowance allows nothing');
  t.same([...allowedNames({ selector: {} }, storage)].sort(), ['bronze', 'gold', 'silver'], 'an empty selector matches every class, as in Kubernetes');
});

t.test('classAnnotationsOf: one annotation per restricted kind, sorted; null (removed) for the others', async (t) => {
  const tenant = { spec: { priorityClasses: { allowed: ['b', 'a'] }, storageClasses: { selector: { matchLabels: { tier: 'gold' } } } } } as unknown as Tenant;
  const annotations = classAnnotationsOf(tenant, new Map([['storageclasses', storage]]));
  t.same(annotations, {
    'tenantgate.kubezoo.io/allowed-priorityclasses': 'a,b',
    'tenantgate.kubezoo.io/allowed-runtimeclasses': null,
    'tenantgate.kubezoo.io/allowed-storageclasses': 'gold',
    'tenantgate.kubezoo.io/allowed-ingressclasses': null,
    'tenantgate.kubezoo.io/allowed-deviceclasses': null,
    // No platform class values known: the band is the apiserver's own for classes that are not system ones.
    'tenantgate.kubezoo.io/priority-band': '-2147483648,1000000000',
  });
  const nothing = classAnnotationsOf({ spec: { priorityClasses: { allowed: [] } } } as unknown as Tenant, new Map());
  t.equal(nothing['tenantgate.kubezoo.io/allowed-priorityclasses'], '', 'allowing nothing is an empty list, not no restriction');
});

t.test('a default is one of the classes allowed; a Tenant naming only a default allows only it', async (t) => {
  t.same([...allowedNames({ selector: { matchLabels: { tier: 'gold' } }, default: 'bronze' }, storage)].sort(), ['bronze', 'gold']);
  const annotations = classAnnotationsOf(
    { spec: { storageClasses: { default: 'silver' }, priorityClasses: { default: 'system-cluster-critical' } } } as unknown as Tenant,
    new Map([['storageclasses', storage]]),
  );
  t.equal(annotations['tenantgate.kubezoo.io/allowed-storageclasses'], 'silver');
  t.equal(annotations['tenantgate.kubezoo.io/allowed-priorityclasses'], 'system-cluster-critical', 'a critical class named as the default is named');
  const unknownField = thrownStatus(() => validateTenant({ ...tenantBody, spec: { storageClasses: { default: 'Not A Name' } } }, null));
  t.equal(unknownField.code, 400);
  t.match(unknownField.message, 'spec.storageClasses.default');
  const device = thrownStatus(() => validateTenant({ ...tenantBody, spec: { deviceClasses: { default: 'gpu' } } }, null));
  t.equal(device.code, 400);
  t.match(device.message, 'no default device class');
  t.same(
    validateTenant({ ...tenantBody, spec: { ingressClasses: { default: 'internal' } } }, null).spec.ingressClasses,
    { default: 'internal' },
    'a default alone is taken',
  );
});

t.test("refusePlatformPriorityClass: the tenant's set when it has one, else anything but the critical classes", async (t) => {
  const only = (allowed: string[]) => (resource: string, name: string) => resource === 'priorityclasses' && allowed.includes(name);
  t.doesNotThrow(() => refusePlatformPriorityClass('tg-high'), 'no set: a platform class');
  t.throws(() => refusePlatformPriorityClass('system-node-critical'), { code: 403 }, 'no set: never a critical class');
  t.doesNotThrow(() => refusePlatformPriorityClass(undefined, only([])), 'no class named: nothing to judge');
  t.doesNotThrow(() => refusePlatformPriorityClass('system-cluster-critical', only(['system-cluster-critical'])), 'a critical class its Tenant names');
  try {
    refusePlatformPriorityClass('tg-high', only(['tg-low']));
    t.fail("tg-high is not the tenant's");
  } catch (error) {
    t.equal((error as StatusError).code, 403);
    t.match((error as StatusError).message, /"tg-high" is not one of the priority classes this tenant may use/);
  }
});

t.test('platformClassHidden: only class kinds, only what the tenant may not use', async (t) => {
  const allows = (resource: string, name: string) => !(resource === 'storageclasses' && name === 'silver');
  t.equal(platformClassHidden('storageclasses', { metadata: { name: 'silver' } }, allows), true);
  t.equal(platformClassHidden('storageclasses', { metadata: { name: 'gold' } }, allows), false);
  t.equal(
    platformClassHidden('nodes', { metadata: { name: 'silver' } }, () => false),
    false,
    'not a class kind',
  );
  t.equal(platformClassHidden('storageclasses', { metadata: { name: 'silver' } }, undefined), false, 'no tenant classes known: shown');
});

t.test('the class kinds a Tenant restricts are the ones its views filter (two lists, one per layer)', async (t) => {
  t.same(
    [...PLATFORM_CLASS_RESOURCES].sort(),
    Object.values(PLATFORM_CLASS_FIELDS)
      .map((kind) => kind.resource)
      .sort(),
  );
});

t.test(
  "a tenant's priority band: below the lowest platform class it may not use, unless its Tenant sets the band; a band alone restricts no class",
  async (t) => {
    const values = new Map([
      ['low', 100],
      ['mid', 5000],
      ['system-cluster-critical', 2_000_000_000],
    ]);
    const restricted = { spec: { priorityClasses: { allowed: ['low'] } } } as unknown as Tenant;
    t.same(
      priorityBandOf(restricted, values, (name) => name === 'low'),
      { min: -2147483648, max: 4999 },
    );
    const open = { spec: {} } as unknown as Tenant;
    t.same(
      priorityBandOf(open, values, (name) => !name.startsWith('system-')),
      { min: -2147483648, max: 1_000_000_000 },
      "nothing set: the apiserver's own ceiling",
    );
    const banded = { spec: { priorityClasses: { band: { min: 0, max: 300 } } } } as unknown as Tenant;
    t.same(
      priorityBandOf(banded, values, () => true),
      { min: 0, max: 300 },
    );
    const annotations = classAnnotationsOf(banded, new Map([['priorityclasses', new Map([['low', {}]])]]), values);
    t.equal(annotations['tenantgate.kubezoo.io/allowed-priorityclasses'], null, 'a band alone restricts no platform class');
    t.equal(annotations['tenantgate.kubezoo.io/priority-band'], '0,300', 'and is written for the upstream policy');
    const refused = thrownStatus(() => validateTenant({ ...tenantBody, spec: { priorityClasses: { band: { min: 10, max: 5 } } } }, null));
    t.equal(refused.code, 400);
    t.match(refused.message, /spec\.priorityClasses\.band/);
    t.equal(
      thrownStatus(() => validateTenant({ ...tenantBody, spec: { priorityClasses: { band: { max: 2_000_000_000 } } } }, null)).code,
      400,
      'above the user-definable range',
    );
    t.equal(thrownStatus(() => validateTenant({ ...tenantBody, spec: { storageClasses: { band: { max: 1 } } } }, null)).code, 400, 'priority classes only');
  },
);
