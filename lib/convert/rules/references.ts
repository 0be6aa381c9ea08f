// References from one object to another: metadata.ownerReferences and ObjectReferences (event subjects, endpoint
// targets, PV claims). Namespaces take the prefix, names of the tenant's cluster-scoped kinds too, custom groups too.
// On the way back a reference outside the tenant makes the whole object not the tenant's (false).
import { invalid, StatusError } from '../../errors/status-error.ts';
import { apiVersionToTenant, apiVersionToUpstream } from './api-groups.ts';
import { eachObjectAt, everyObjectAt, isObject, stringAt } from './json.ts';
import { namespaceToTenant, namespaceToUpstream, nameToTenant, nameToUpstream } from './names.ts';
import { nameMappingOfKind } from './referents.ts';
import type { ConvertContext, Json, KindRule } from './rule.ts';

function unknownOwner(index: number, apiVersion: string, kind: string): StatusError {
  const field = `metadata.ownerReferences[${index}]`;
  const message = `${field}: Invalid value: ${JSON.stringify(kind)}: no kind ${JSON.stringify(kind)} is served in ${JSON.stringify(apiVersion)}`;
  return invalid(message, { causes: [{ reason: 'FieldValueInvalid', message, field }] });
}

/** Throws 422 for an owner whose kind is unknown: guessing its scope wrong would let the garbage collector delete the dependent. */
export function ownerReferencesToUpstream(metadata: Json, ctx: ConvertContext): void {
  const owners = metadata.ownerReferences;
  if (!Array.isArray(owners)) return;
  for (let i = 0; i < owners.length; i++) {
    const owner: unknown = owners[i];
    if (!isObject(owner)) continue;
    const apiVersion = stringAt(owner, 'apiVersion') ?? '';
    const kind = stringAt(owner, 'kind') ?? '';
    const mapping = nameMappingOfKind(apiVersion, kind, ctx);
    if (mapping === undefined) throw unknownOwner(i, apiVersion, kind);
    const name = stringAt(owner, 'name');
    if (name) owner.name = nameToUpstream(mapping, name, ctx.tenant);
    owner.apiVersion = apiVersionToUpstream(apiVersion, ctx.tenant, kind);
  }
}

export function ownerReferencesToTenant(metadata: Json, ctx: ConvertContext): boolean {
  const owners = metadata.ownerReferences;
  if (!Array.isArray(owners)) return true;
  for (const owner of owners) {
    if (!isObject(owner)) continue;
    const upstreamApiVersion = stringAt(owner, 'apiVersion') ?? '';
    const apiVersion = apiVersionToTenant(upstreamApiVersion, ctx.tenant);
    if (apiVersion === null) return false;
    if (upstreamApiVersion !== '') owner.apiVersion = apiVersion; // nothing added that was not there
    const mapping = nameMappingOfKind(apiVersion, stringAt(owner, 'kind') ?? '', ctx) ?? 'plain';
    const name = stringAt(owner, 'name');
    if (name) {
      const mine = nameToTenant(mapping, name, ctx.tenant);
      if (mine === null) return false;
      owner.name = mine;
    }
  }
  return true;
}

/**
 * An ObjectReference { apiVersion, kind, namespace, name }. A referent of unknown kind without a namespace is taken
 * to be one of the tenant's cluster-scoped objects (its name prefixed), as KubeZoo does.
 */
export function objectReferenceToUpstream(ref: Json, ctx: ConvertContext): void {
  const apiVersion = stringAt(ref, 'apiVersion') ?? '';
  const namespace = stringAt(ref, 'namespace');
  const name = stringAt(ref, 'name');
  if (namespace) ref.namespace = namespaceToUpstream(namespace, ctx.tenant);
  if (name) {
    const mapping = nameMappingOfKind(apiVersion, stringAt(ref, 'kind') ?? '', ctx) ?? (namespace ? 'plain' : 'prefix');
    ref.name = nameToUpstream(mapping, name, ctx.tenant);
  }
  if (apiVersion) ref.apiVersion = apiVersionToUpstream(apiVersion, ctx.tenant, stringAt(ref, 'kind') ?? '');
}

export function objectReferenceToTenant(ref: Json, ctx: ConvertContext): boolean {
  const upstreamApiVersion = stringAt(ref, 'apiVersion') ?? '';
  const apiVersion = apiVersionToTenant(upstreamApiVersion, ctx.tenant);
  if (apiVersion === null) return false;
  if (upstreamApiVersion) ref.apiVersion = apiVersion;
  const namespace = stringAt(ref, 'namespace');
  if (namespace) {
    const mine = namespaceToTenant(namespace, ctx.tenant);
    if (mine === null) return false;
    ref.namespace = mine;
  }
  const name = stringAt(ref, 'name');
  if (name) {
    const mapping = nameMappingOfKind(apiVersion, stringAt(ref, 'kind') ?? '', ctx) ?? (namespace ? 'plain' : 'prefix');
    const mine = nameToTenant(mapping, name, ctx.tenant);
    if (mine === null) return false;
    ref.name = mine;
  }
  return true;
}

/** A rule for a kind whose only extra fields are ObjectReferences at these paths. */
export function objectReferencesRule(paths: readonly (readonly string[])[]): KindRule {
  return {
    toUpstream(obj, ctx) {
      for (const path of paths) eachObjectAt(obj, path, (ref) => objectReferenceToUpstream(ref, ctx));
      return obj;
    },
    toTenant(obj, ctx) {
      for (const path of paths) {
        if (!everyObjectAt(obj, path, (ref) => objectReferenceToTenant(ref, ctx))) return null;
      }
      return obj;
    },
  };
}
