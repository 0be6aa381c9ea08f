// The upstream's own refusal of a tenant's pod, PVC, Ingress or ResourceClaim naming a platform class its Tenant does
// not allow: one shared ValidatingAdmissionPolicy reading the allowed names from the namespace's annotations
// (tenant-classes.ts), so it holds for objects a controller makes from a tenant's template too. Never matches a
// namespace without the tenant label, nor one that restricts nothing (no annotation): no object per tenant.
import { TENANT_LABEL } from '../convert/prefix.ts';
import { cel, denyBindingOf, keptPolicyObjects, tenantNamespacesPolicy } from './confinement-policy.ts';
import { allowedClassesAnnotation, ALLOWED_CLASSES_ANNOTATIONS } from './tenant-classes.ts';

/** Name of the policy and of its binding (no tenant's `<id>-` prefix: `tenant` + `g`). */
export const TENANT_CLASSES = 'tenantgate.tenant-classes';

const ANNOTATIONS = 'namespaceObject.metadata.annotations';

/** CEL: `name` (an expression of a string) is allowed by the namespace's annotation for `resource`, or the namespace restricts nothing of it. */
export function classAllowedCel(resource: string, name: string): string {
  const key = cel(allowedClassesAnnotation(resource));
  return `(!(${key} in ${ANNOTATIONS}) || ${name} in ${ANNOTATIONS}[${key}].split(','))`;
}

function refusal(resource: string, kind: string, field: string, name: string) {
  const key = cel(allowedClassesAnnotation(resource));
  return {
    messageExpression: `'tenantgate: ${kind} ' + ${name} + ' is not one of the ${field} this tenant may use (' + ${ANNOTATIONS}[${key}] + ')'`,
    message: `tenantgate: the ${kind} is not one this tenant may use`,
    reason: 'Forbidden',
  };
}

/** A string field that may be absent or empty: then nothing to check. */
const named = (path: string) => `has(${path}) && ${path} != ''`;

export const TENANT_CLASSES_POLICY = tenantNamespacesPolicy(
  TENANT_CLASSES,
  [
    { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods', 'persistentvolumeclaims'], scope: 'Namespaced' },
    { apiGroups: ['networking.k8s.io'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['ingresses'], scope: 'Namespaced' },
    { apiGroups: ['resource.k8s.io'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['resourceclaims'], scope: 'Namespaced' },
  ],
  {
    // (Not a match condition: those cannot read namespaceObject.) A namespace that restricts nothing passes at once.
    variables: [
      { name: 'resource', expression: 'request.resource.resource' },
      { name: 'restricted', expression: `has(${ANNOTATIONS}) && [${ALLOWED_CLASSES_ANNOTATIONS.map(cel).join(', ')}].exists(key, key in ${ANNOTATIONS})` },
    ],
    validations: [
      {
        // (A class of the tenant's own, `<id>-<name>`, is within its band: tenants/priority-policy.ts.)
        expression:
          `!variables.restricted || variables.resource != 'pods' || !(${named('object.spec.priorityClassName')}) || ` +
          `object.spec.priorityClassName.startsWith(namespaceObject.metadata.labels[${cel(TENANT_LABEL)}] + '-') || ${classAllowedCel('priorityclasses', 'object.spec.priorityClassName')}`,
        ...refusal('priorityclasses', 'priority class', 'priority classes', 'object.spec.priorityClassName'),
      },
      {
        expression: `!variables.restricted || variables.resource != 'pods' || !(${named('object.spec.runtimeClassName')}) || ${classAllowedCel('runtimeclasses', 'object.spec.runtimeClassName')}`,
        ...refusal('runtimeclasses', 'runtime class', 'runtime classes', 'object.spec.runtimeClassName'),
      },
      {
        // (Admission's DefaultStorageClass has filled in the default class by now: it is judged like a named one.)
        expression: `!variables.restricted || variables.resource != 'persistentvolumeclaims' || !(${named('object.spec.storageClassName')}) || ${classAllowedCel('storageclasses', 'object.spec.storageClassName')}`,
        ...refusal('storageclasses', 'storage class', 'storage classes', 'object.spec.storageClassName'),
      },
      {
        expression: `!variables.restricted || variables.resource != 'ingresses' || !(${named('object.spec.ingressClassName')}) || ${classAllowedCel('ingressclasses', 'object.spec.ingressClassName')}`,
        ...refusal('ingressclasses', 'ingress class', 'ingress classes', 'object.spec.ingressClassName'),
      },
      {
        expression:
          `!variables.restricted || variables.resource != 'resourceclaims' || !has(object.spec.devices) || !has(object.spec.devices.requests) || object.spec.devices.requests.all(r, ` +
          `(!has(r.exactly) || ${classAllowedCel('deviceclasses', 'r.exactly.deviceClassName')}) && ` +
          `(!has(r.firstAvailable) || r.firstAvailable.all(s, ${classAllowedCel('deviceclasses', 's.deviceClassName')})))`,
        messageExpression: `'tenantgate: a device class of this claim is not one of the device classes this tenant may use (' + ${ANNOTATIONS}[${cel(allowedClassesAnnotation('deviceclasses'))}] + ')'`,
        message: 'tenantgate: a device class of the claim is not one this tenant may use',
        reason: 'Forbidden',
      },
    ],
  },
);

export const TENANT_CLASSES_BINDING = denyBindingOf(TENANT_CLASSES);

export const TENANT_CLASSES_OBJECTS = keptPolicyObjects(TENANT_CLASSES_POLICY, TENANT_CLASSES_BINDING);
