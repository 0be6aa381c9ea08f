// Checks what a client sends as a Tenant (create, update, the result of a patch) before the store sees it.
// Never trusts or fills server-owned fields (uid, resourceVersion, timestamps): it accepts the shape or refuses it.
import { invalidField } from '../convert/rules/names.ts';
import { badRequest } from '../errors/status-error.ts';
import { parseQuantity } from './quantity.ts';
import { invalidTenantId, PLATFORM_CLASS_FIELDS, TENANT_API_VERSION, TENANT_GROUP, type PlatformClassField, type Tenant } from './tenant.ts';
import { HIGHEST_USER_DEFINABLE_PRIORITY } from '../convert/rules/platform-classes.ts';
import { INT32_MIN } from '../convert/rules/priority-classes.ts';

const CONDITION_STATUSES = new Set(['True', 'False', 'Unknown']);

/** The names a ResourceQuota takes without a domain (kube-apiserver's IsStandardQuotaResourceName). */
const STANDARD_QUOTA_RESOURCES = new Set([
  'pods',
  'services',
  'replicationcontrollers',
  'resourcequotas',
  'secrets',
  'configmaps',
  'persistentvolumeclaims',
  'services.nodeports',
  'services.loadbalancers',
  'cpu',
  'memory',
  'ephemeral-storage',
  'requests.cpu',
  'requests.memory',
  'requests.storage',
  'requests.ephemeral-storage',
  'limits.cpu',
  'limits.memory',
  'limits.ephemeral-storage',
]);
/** Huge pages of any size count as standard too: `hugepages-2Mi`, `requests.hugepages-1Gi`. */
const HUGE_PAGES_PREFIXES = ['hugepages-', 'requests.hugepages-'];
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/**
 * Why a ResourceQuota would refuse `name` as a key of spec.hard, or null when it takes it (ValidateResourceQuotaResourceName):
 * a qualified name (`[<DNS subdomain>/]<name>`), and without a `/` one of the standard quota resources.
 */
function invalidQuotaResourceName(name: string): string | null {
  const slash = name.indexOf('/');
  const prefix = slash === -1 ? null : name.slice(0, slash);
  const local = slash === -1 ? name : name.slice(slash + 1);
  const qualified =
    !local.includes('/') && (prefix === null || (prefix.length <= 253 && DNS_SUBDOMAIN.test(prefix))) && local.length <= 63 && QUALIFIED_NAME_PART.test(local);
  if (!qualified) {
    return "must be a qualified name: an optional DNS subdomain and '/', then 1-63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character";
  }
  if (prefix === null && !STANDARD_QUOTA_RESOURCES.has(name) && !HUGE_PAGES_PREFIXES.some((p) => name.startsWith(p))) {
    return 'must be a standard resource for quota (pods, requests.cpu, count/<resource>, ...) or fully qualified (<domain>/<name>)';
  }
  return null;
}

function isPlainObject(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isStringMap(value: unknown): boolean {
  return value === undefined || (isPlainObject(value) && Object.values(value).every((v) => typeof v === 'string'));
}

const SELECTOR_OPERATORS = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist']);

/** Why `name` cannot be the tenant's default class of the kind, or null. Kubernetes defaults no device class (every device request names one). */
function invalidDefaultClass(field: PlatformClassField, name: unknown): string | null {
  if (name === undefined) return null;
  if (typeof name !== 'string' || !DNS_SUBDOMAIN.test(name) || name.length > 253) return 'must be the name of a class (a DNS subdomain)';
  if (field === 'deviceClasses') return 'Kubernetes has no default device class: every device request names its class';
  return null;
}

const ALLOWANCE_FIELDS = new Set(['allowed', 'selector', 'default']);
const PRIORITY_ALLOWANCE_FIELDS = new Set([...ALLOWANCE_FIELDS, 'band']);

/** What is wrong with spec.priorityClasses.band, or null. */
function invalidBand(band: unknown): { at: string; value: unknown; why: string } | null {
  if (band === undefined) return null;
  if (!isPlainObject(band)) return { at: '.band', value: band, why: 'must be an object with min and max (priority values)' };
  for (const key of Object.keys(band))
    if (key !== 'min' && key !== 'max') return { at: `.band.${key}`, value: band[key], why: 'unknown field: only min and max' };
  for (const end of ['min', 'max'] as const) {
    const value = band[end];
    if (value !== undefined && !(Number.isInteger(value) && value >= INT32_MIN && value <= HIGHEST_USER_DEFINABLE_PRIORITY)) {
      return {
        at: `.band.${end}`,
        value,
        why: `must be an integer from ${INT32_MIN} to ${HIGHEST_USER_DEFINABLE_PRIORITY} (the values a PriorityClass that is not a system one may take)`,
      };
    }
  }
  if (band.min !== undefined && band.max !== undefined && (band.min as number) > (band.max as number))
    return { at: '.band', value: band, why: 'min must not be above max' };
  return null;
}

/** What is wrong with a ClassAllowance (`at` is the field below spec.<kind>Classes), or null. */
function invalidClassAllowance(field: PlatformClassField, allowance: unknown): { at: string; value: unknown; why: string } | null {
  if (!isPlainObject(allowance))
    return { at: '', value: allowance, why: 'must be an object with allowed (class names), selector (a label selector) and default (a class name)' };
  const fields = field === 'priorityClasses' ? PRIORITY_ALLOWANCE_FIELDS : ALLOWANCE_FIELDS;
  for (const key of Object.keys(allowance))
    if (!fields.has(key)) return { at: `.${key}`, value: allowance[key], why: `unknown field: only ${[...fields].join(', ')}` };
  const bandWrong = invalidBand(allowance.band);
  if (bandWrong !== null) return bandWrong;
  const { allowed, selector } = allowance;
  if (allowed !== undefined && !(Array.isArray(allowed) && allowed.every((name) => typeof name === 'string' && name !== ''))) {
    return { at: '.allowed', value: allowed, why: 'must be a list of class names' };
  }
  const why = invalidDefaultClass(field, allowance.default);
  if (why !== null) return { at: '.default', value: allowance.default, why };
  if (selector === undefined) return null;
  if (!isPlainObject(selector)) return { at: '.selector', value: selector, why: 'must be a label selector (matchLabels, matchExpressions)' };
  if (!isStringMap(selector.matchLabels)) return { at: '.selector.matchLabels', value: selector.matchLabels, why: 'must map label keys to values' };
  const expressions = selector.matchExpressions;
  if (expressions === undefined) return null;
  if (!Array.isArray(expressions)) return { at: '.selector.matchExpressions', value: expressions, why: 'must be a list' };
  for (const [i, expression] of expressions.entries()) {
    const at = `.selector.matchExpressions[${i}]`;
    if (!isPlainObject(expression) || typeof expression.key !== 'string' || expression.key === '')
      return { at: `${at}.key`, value: expression, why: 'a key is required' };
    if (!SELECTOR_OPERATORS.has(expression.operator))
      return { at: `${at}.operator`, value: expression.operator, why: 'must be In, NotIn, Exists or DoesNotExist' };
    const values = expression.values ?? [];
    if (!Array.isArray(values) || !values.every((value: unknown) => typeof value === 'string'))
      return { at: `${at}.values`, value: values, why: 'must be a list of strings' };
    const needsValues = expression.operator === 'In' || expression.operator === 'NotIn';
    if (needsValues !== values.length > 0)
      return { at: `${at}.values`, value: values, why: needsValues ? 'must be non-empty for In and NotIn' : 'must be empty for Exists and DoesNotExist' };
  }
  return null;
}

/**
 * The body as a Tenant, or a Status: 400 for what is not a Tenant at all (not an object, another kind or version, a
 * name other than the URL's), 422 Invalid naming the field for a Tenant with a bad value (an id that is not 6 of
 * [a-z0-9], labels that are not strings, ...). Quota quantities written as numbers become strings, as Kubernetes does;
 * a quota a ResourceQuota would refuse (a resource name it does not know, a malformed or negative quantity) is a 400
 * naming the field.
 */
export function validateTenant(body: unknown, nameInPath: string | null): Tenant {
  if (!isPlainObject(body)) throw badRequest('the request body must be a Tenant object');
  if (body.apiVersion !== TENANT_API_VERSION) {
    throw badRequest(`the API version in the data (${String(body.apiVersion ?? '')}) does not match the expected API version (${TENANT_API_VERSION})`);
  }
  if (body.kind !== 'Tenant') throw badRequest(`the kind in the data (${String(body.kind ?? '')}) does not match the expected kind (Tenant)`);
  const metadata = body.metadata;
  if (!isPlainObject(metadata)) throw badRequest('the Tenant has no metadata');
  const name = typeof metadata.name === 'string' ? metadata.name : '';
  const fail = (field: string, value: unknown, why: string) =>
    invalidField('Tenant', TENANT_GROUP, name, field, typeof value === 'string' ? value : (JSON.stringify(value) ?? ''), why);
  // As fail's message and causes, answered as a Bad Request.
  const refuse = (field: string, value: string, why: string) => {
    const detail = `Invalid value: ${JSON.stringify(value)}: ${why}`;
    return badRequest(`Tenant ${JSON.stringify(name)} is invalid: ${field}: ${detail}`, {
      name,
      group: TENANT_GROUP,
      kind: 'Tenant',
      causes: [{ reason: 'FieldValueInvalid', message: detail, field }],
    });
  };
  if (nameInPath !== null && name !== nameInPath) throw badRequest(`the name of the object (${name}) does not match the name on the URL (${nameInPath})`);
  if (name === '' && typeof metadata.generateName === 'string')
    throw fail('metadata.generateName', metadata.generateName, 'a Tenant is named by its id: set metadata.name');
  const why = invalidTenantId(name);
  if (why !== null) throw fail('metadata.name', name, why);
  if (!isStringMap(metadata.labels)) throw fail('metadata.labels', metadata.labels, 'labels must map strings to strings');
  if (!isStringMap(metadata.annotations)) throw fail('metadata.annotations', metadata.annotations, 'annotations must map strings to strings');
  if (metadata.finalizers !== undefined && !(Array.isArray(metadata.finalizers) && metadata.finalizers.every((f: unknown) => typeof f === 'string'))) {
    throw fail('metadata.finalizers', metadata.finalizers, 'finalizers must be a list of strings');
  }
  const spec = body.spec ?? {};
  if (!isPlainObject(spec)) throw fail('spec', spec, 'spec must be an object');
  if (spec.id !== undefined && !Number.isSafeInteger(spec.id)) throw fail('spec.id', spec.id, 'spec.id must be an integer');
  if (spec.quota !== undefined) {
    if (!isPlainObject(spec.quota)) throw fail('spec.quota', spec.quota, 'spec.quota must be an object');
    const hard = spec.quota.hard;
    if (hard !== undefined) {
      if (!isPlainObject(hard)) throw fail('spec.quota.hard', hard, 'spec.quota.hard must map resource names to quantities');
      for (const [resource, quantity] of Object.entries(hard)) {
        const field = `spec.quota.hard[${resource}]`;
        const badName = invalidQuotaResourceName(resource);
        if (badName !== null) throw refuse(field, resource, badName);
        if (typeof quantity === 'number' && Number.isFinite(quantity)) hard[resource] = String(quantity);
        else if (typeof quantity !== 'string' || quantity === '') throw fail(field, quantity, 'a quantity must be a string such as "4" or "8Gi"');
        const text: string = hard[resource];
        const nano = parseQuantity(text);
        if (nano === null) throw refuse(field, text, 'must be a quantity such as "4", "500m", "1.5", "8Gi" or "1e3"');
        if (nano < 0n) throw refuse(field, text, 'must be greater than or equal to 0');
      }
    }
  }
  for (const field of Object.keys(PLATFORM_CLASS_FIELDS) as PlatformClassField[]) {
    if (spec[field] === undefined || spec[field] === null) {
      delete spec[field];
      continue;
    }
    const why = invalidClassAllowance(field, spec[field]);
    if (why !== null) throw refuse(`spec.${field}${why.at}`, JSON.stringify(why.value) ?? '', why.why);
  }
  const status = body.status;
  if (status !== undefined) {
    if (!isPlainObject(status)) throw fail('status', status, 'status must be an object');
    if (status.online !== undefined && typeof status.online !== 'boolean') throw fail('status.online', status.online, 'status.online must be true or false');
    if (status.conditions !== undefined) {
      if (!Array.isArray(status.conditions)) throw fail('status.conditions', status.conditions, 'status.conditions must be a list');
      status.conditions.forEach((condition: unknown, i: number) => {
        if (!isPlainObject(condition) || typeof condition.type !== 'string' || condition.type === '')
          throw fail(`status.conditions[${i}].type`, condition, 'a condition needs a type');
        if (!CONDITION_STATUSES.has(condition.status)) throw fail(`status.conditions[${i}].status`, condition.status, 'must be True, False or Unknown');
      });
    }
  }
  return { ...body, spec } as Tenant;
}
