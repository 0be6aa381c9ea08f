// The tenant's default classes filled into a protobuf request body that names none, as rules/class-defaults.ts fills
// them in JSON: priority and runtime classes of pod specs, storage classes of claims, an Ingress's class. Never
// replaces a class the object names.
import type { KindRow } from '../kinds.ts';
import { INGRESS_CLASS_ANNOTATION, type DefaultClass } from '../rules/class-defaults.ts';
import { MessageEdit, rewriteAt, type Step } from './message-edit.ts';
import { EPHEMERAL_CLAIM_TEMPLATES, TEMPLATE_RULES } from './pod-spec.ts';
import { INGRESS, INGRESS_SPEC, OBJECT_META, PERSISTENT_VOLUME_CLAIM_SPEC, POD_SPEC } from './field-numbers.ts';

// ---- the tenant's default classes, as rules/class-defaults.ts fills them ----

// PodSpec.priorityClassName is a plain string (empty is unset), runtimeClassName and
// PersistentVolumeClaimSpec.storageClassName are optional (absent is unset); a claim and a claim template hold their spec at 2.
/** Claim specs by `<group>/<kind>` besides pod specs' ephemeral volumes: a PVC's own, a StatefulSet's volumeClaimTemplates = 4. */
const CLAIM_SPECS: ReadonlyMap<string, readonly (readonly Step[])[]> = new Map([
  ['/PersistentVolumeClaim', [[2]]],
  ['apps/StatefulSet', [[2, 4, '*', 2]]],
]);
// IngressSpec.ingressClassName is optional; the older annotation is among the metadata's.
const INGRESS_CLASS_ANNOTATION_BYTES = Buffer.from(INGRESS_CLASS_ANNOTATION);

/** Sets a string field to `value` when unset (absent; `orEmpty`: empty too). */
function fillString(edit: MessageEdit, number: number, name: string, value: string | undefined, orEmpty: boolean): void {
  if (value === undefined) return;
  const field = edit.single(number, name);
  if (field === undefined) edit.add(number, Buffer.from(value));
  else if (orEmpty && field.end === field.valueStart) edit.replaceString(field, value);
}

function claimSpecDefaultsWire(spec: Buffer, defaultClass: DefaultClass): Buffer {
  const edit = new MessageEdit(spec, 'claim spec');
  fillString(edit, PERSISTENT_VOLUME_CLAIM_SPEC.storageClassName, 'storageClassName', defaultClass('storageclasses'), false);
  return edit.finish();
}

function podSpecDefaultsWire(spec: Buffer, defaultClass: DefaultClass): Buffer {
  const edit = new MessageEdit(spec, 'pod spec');
  fillString(edit, POD_SPEC.priorityClassName, 'priorityClassName', defaultClass('priorityclasses'), true);
  fillString(edit, POD_SPEC.runtimeClassName, 'runtimeClassName', defaultClass('runtimeclasses'), false);
  return rewriteAt(edit.finish(), [...EPHEMERAL_CLAIM_TEMPLATES, 2], 'pod spec', (claim) => claimSpecDefaultsWire(claim, defaultClass));
}

/** Whether an Ingress's metadata names its class by the older annotation. */
function namesIngressClassByAnnotation(object: Buffer): boolean {
  const meta = new MessageEdit(object, 'ingress').single(1, 'metadata');
  if (meta === undefined) return false;
  const edit = new MessageEdit(object.subarray(meta.valueStart, meta.end), 'metadata');
  return edit.all(OBJECT_META.annotations, 'annotations').some((entry) => {
    const key = new MessageEdit(edit.payload(entry), 'metadata.annotations').single(1, 'key');
    return key !== undefined && edit.payload(entry).subarray(key.valueStart, key.end).equals(INGRESS_CLASS_ANNOTATION_BYTES);
  });
}

/** The whole object with the tenant's default classes filled in where it names none (rules/class-defaults.ts). */
export function classDefaultsToUpstreamWire(object: Buffer, row: KindRow, defaultClass: DefaultClass): Buffer {
  const key = `${row.group}/${row.kind}`;
  let result = object;
  const templates = TEMPLATE_RULES.has(row.rule) ? row.protobuf?.templates : undefined;
  for (const path of templates?.podSpecs ?? []) result = rewriteAt(result, path, 'object', (spec) => podSpecDefaultsWire(spec, defaultClass));
  for (const path of CLAIM_SPECS.get(key) ?? []) result = rewriteAt(result, path, 'object', (spec) => claimSpecDefaultsWire(spec, defaultClass));
  if (key === 'networking.k8s.io/Ingress' && !namesIngressClassByAnnotation(result)) {
    const ingressClass = defaultClass('ingressclasses');
    result = rewriteAt(result, [INGRESS.spec], 'object', (spec) => {
      const edit = new MessageEdit(spec, 'ingress spec');
      fillString(edit, INGRESS_SPEC.ingressClassName, 'ingressClassName', ingressClass, false);
      return edit.finish();
    });
  }
  return result;
}
