// The upstream's own refusal of a tenant pod that would take a platform-critical priority: one shared
// ValidatingAdmissionPolicy on pods created in any tenant namespace, by a tenant or by a controller from its template.
// Never matches a namespace without the tenant label, nor anything but a pod's create; no object per tenant. A class
// its Tenant names (spec.priorityClasses) is the tenant's, critical or not.
import { HIGHEST_USER_DEFINABLE_PRIORITY } from '../convert/rules/platform-classes.ts';
import { cel, denyBindingOf, keptPolicyObjects, tenantNamespacesPolicy } from './confinement-policy.ts';
import { TENANT_LABEL } from '../convert/prefix.ts';
import { allowedClassesAnnotation, PRIORITY_BAND_ANNOTATION } from './tenant-classes.ts';

const PRIORITY_ANNOTATION = allowedClassesAnnotation('priorityclasses');
const ANNOTATIONS = 'namespaceObject.metadata.annotations';
const BAND = `${ANNOTATIONS}[${cel(PRIORITY_BAND_ANNOTATION)}].split(',')`;

/** Name of the policy and of its binding (no tenant's `<id>-` prefix: `tenant` + `g`). */
export const TENANT_PRIORITY = 'tenantgate.tenant-priority';

/**
 * Priority admission resolves a pod's class to `spec.priority` before validation, so the policy judges the number: no
 * class above the user-definable range (the platform's `system-*-critical`), whatever its name or how it was asked for.
 */
export const TENANT_PRIORITY_POLICY = tenantNamespacesPolicy(
  TENANT_PRIORITY,
  [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], scope: 'Namespaced' }],
  {
    validations: [
      {
        // ... unless the tenant's Tenant names the class (tenant-classes.ts writes the names on its namespaces).
        expression:
          `!has(object.spec.priority) || object.spec.priority <= ${HIGHEST_USER_DEFINABLE_PRIORITY} || ` +
          `(has(object.spec.priorityClassName) && has(namespaceObject.metadata.annotations) && ${cel(PRIORITY_ANNOTATION)} in namespaceObject.metadata.annotations && ` +
          `object.spec.priorityClassName in namespaceObject.metadata.annotations[${cel(PRIORITY_ANNOTATION)}].split(','))`,
        messageExpression: `"tenantgate: priority class " + (has(object.spec.priorityClassName) ? object.spec.priorityClassName : "") + " (priority " + string(object.spec.priority) + ") is the platform's own: a tenant's pods may not take it"`,
        message: "tenantgate: a tenant's pods may not take the platform's critical priority",
        reason: 'Forbidden',
      },
      {
        // A class of the tenant's own (`<id>-<name>`) gives its pods a priority within the band its Tenant sets,
        // written on the namespace (tenant-classes.ts) when it bounds more than the apiserver does.
        expression:
          `!has(object.spec.priority) || !has(object.spec.priorityClassName) || !object.spec.priorityClassName.startsWith(namespaceObject.metadata.labels[${cel(TENANT_LABEL)}] + '-') || ` +
          `!has(${ANNOTATIONS}) || !(${cel(PRIORITY_BAND_ANNOTATION)} in ${ANNOTATIONS}) || ` +
          `(object.spec.priority >= int(${BAND}[0]) && object.spec.priority <= int(${BAND}[1]))`,
        messageExpression: `"tenantgate: priority class " + object.spec.priorityClassName + " (priority " + string(object.spec.priority) + ") is outside the values this tenant's priority classes may take (" + ${ANNOTATIONS}[${cel(PRIORITY_BAND_ANNOTATION)}] + ")"`,
        message: "tenantgate: the pod's priority is outside the values this tenant's priority classes may take",
        reason: 'Forbidden',
      },
    ],
  },
);

export const TENANT_PRIORITY_BINDING = denyBindingOf(TENANT_PRIORITY);

export const TENANT_PRIORITY_OBJECTS = keptPolicyObjects(TENANT_PRIORITY_POLICY, TENANT_PRIORITY_BINDING);
