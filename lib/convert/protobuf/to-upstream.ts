// Protobuf request bodies (`application/vnd.kubernetes.protobuf`: what kubectl and client-go typed clients send for
// built-in kinds since Kubernetes 1.31), converted for a tenant at the wire level, without .proto schemas. Every object
// message has `ObjectMeta metadata = 1`; the metadata, pod templates and pod specs are rewritten at field paths, and
// every other field a kind's JSON rule maps (role rules, binding subjects, reviews, references, selectors, webhooks,
// CRD groups...) is read at its field numbers into a JSON skeleton, mapped by that very rule and written back. Field
// numbers are checked against k8s.io/api, apimachinery and apiextensions-apiserver generated.proto (v0.36) by the unit
// test; every other byte is copied as it came. A kind or version without known field numbers is refused (415: send JSON).
// Never lets a field it interprets through in a form the apiserver could read differently: duplicated singular fields,
// unexpected wire types, groups and out-of-range field numbers on the way are refused (400).
import { accessRefusal, isWholeObjectSubresource, protobufApiVersion, type KindRow, type RuleName, type Scope } from '../kinds.ts';
import type { TenantId } from '../prefix.ts';
import { groupOfApiVersion } from '../rules/api-groups.ts';
import { binding, clusterBinding } from '../rules/rbac.ts';
import type { ConvertContext, KindRule } from '../rules/rule.ts';
import { badRequest } from '../../errors/status-error.ts';
import { MAGIC, unsupported } from './wire.ts';
import { MessageEdit, EMPTY, rewriteAt } from './message-edit.ts';
import { type WireSchema, readSkeleton, writeSkeleton } from './skeleton.ts';
import { parseEnvelope, type Envelope } from './envelope.ts';
import { ruleContext, type Conversion } from './conversion.ts';
import { roleToUpstreamWire, bindingToUpstreamWire, accessReviewToUpstreamWire, rulesReviewToUpstreamWire, metadataOnly } from './access-rules.ts';
import { METADATA_RULES, SKELETON_ROWS } from './kind-schemas.ts';
import { TEMPLATE_RULES, templatesToUpstream } from './pod-spec.ts';
import { objectMetaToUpstream, metaNamesToUpstream } from './object-meta.ts';
import { classDefaultsToUpstreamWire } from './class-defaults.ts';

export interface ProtobufBodyOptions {
  /** The request's verb (create, update; delete and deletecollection carry DeleteOptions, passed on unchanged). */
  readonly verb: string;
  /** '', 'status' or another subresource carrying the object (isWholeObjectSubresource) for a whole object; any other subresource body has only its metadata names converted. */
  readonly subresource: string;
  /**
   * Scope of an upstream custom kind (as ConvertContext.kindScope), for owner references to custom resources;
   * without it such a reference is refused (415).
   */
  readonly kindScope?: (apiVersion: string, kind: string) => Scope | undefined;
  /**
   * Scope of an upstream custom resource (as ConvertContext.scopeOf), for role rules naming resources of a custom
   * group; without it such a rule with resourceNames is refused (415).
   */
  readonly scopeOf?: (group: string, resource: string) => Scope | undefined;
  /** Hosts tenants' webhooks may call by URL (as ConvertContext.webhookUrlHosts); none when omitted. */
  readonly webhookUrlHosts?: ReadonlySet<string> | undefined;
  /** The version the request's path names: field numbers are known for one version of each kind only. */
  readonly version?: string;
  /** Which platform classes the tenant may use (as ConvertContext.allowsPlatformClass). */
  readonly allowsPlatformClass?: ConvertContext['allowsPlatformClass'];
  /** The tenant's default classes, filled into a created or updated object naming none (as ConvertContext.defaultPlatformClass). */
  readonly defaultPlatformClass?: ConvertContext['defaultPlatformClass'];
  /** The tenant's own PriorityClasses beside the platform's (as ConvertContext.priorityClasses). */
  readonly priorityClasses?: ConvertContext['priorityClasses'];
}

/** A kind whose JSON rule maps the fields of `schema` (from the object's own message): read, mapped, written back. */
const skeletonToUpstreamWire =
  (rule: KindRule, schema: WireSchema) =>
  (object: Buffer, conversion: Conversion): Buffer => {
    const json = readSkeleton(object, schema, 'object');
    rule.toUpstream(json, ruleContext(conversion));
    return writeSkeleton(object, schema, json, 'object');
  };

// ---- which kinds are converted from protobuf ----

/** What a kind's JSON rule does beyond the metadata, at the wire level. */
interface ProtobufKind {
  /** The only apiVersion whose field numbers these are (the one the apiserver serves). */
  readonly apiVersion: string;
  readonly toUpstream: (object: Buffer, conversion: Conversion) => Buffer;
}

/** Kinds whose JSON rule maps fields the wire-level code reads into JSON and writes back. */
const FIELD_RULES: ReadonlyMap<RuleName, ProtobufKind> = new Map([
  ['role', { apiVersion: 'rbac.authorization.k8s.io/v1', toUpstream: roleToUpstreamWire }],
  ['binding', { apiVersion: 'rbac.authorization.k8s.io/v1', toUpstream: bindingToUpstreamWire(binding) }],
  ['clusterrolebinding', { apiVersion: 'rbac.authorization.k8s.io/v1', toUpstream: bindingToUpstreamWire(clusterBinding) }],
  ['selfsubjectaccessreview', { apiVersion: 'authorization.k8s.io/v1', toUpstream: accessReviewToUpstreamWire(false) }],
  ['subjectaccessreview', { apiVersion: 'authorization.k8s.io/v1', toUpstream: accessReviewToUpstreamWire(true) }],
  ['selfsubjectrulesreview', { apiVersion: 'authorization.k8s.io/v1', toUpstream: rulesReviewToUpstreamWire }],
  ['tokenreview', { apiVersion: 'authentication.k8s.io/v1', toUpstream: metadataOnly }],
  ['selfsubjectreview', { apiVersion: 'authentication.k8s.io/v1', toUpstream: metadataOnly }],
]);

const SKELETON_KINDS: ReadonlyMap<string, ProtobufKind> = new Map(
  SKELETON_ROWS.map(([key, apiVersion, rule, schema]) => [key, { apiVersion, toUpstream: skeletonToUpstreamWire(rule, schema) }]),
);

const kindName = (row: KindRow) => `${row.kind || row.resource}${row.group === '' ? '' : '.' + row.group}`;

/** How a whole object of this kind is converted besides its metadata; throws 415 for a kind whose rule protobuf cannot follow. */
function protobufKindOf(row: KindRow): ProtobufKind | undefined {
  if (METADATA_RULES.has(row.rule)) return undefined;
  const fieldRule = FIELD_RULES.get(row.rule) ?? SKELETON_KINDS.get(`${row.group}/${row.kind}`);
  if (fieldRule !== undefined) return fieldRule;
  const templates = TEMPLATE_RULES.has(row.rule) ? row.protobuf?.templates : undefined;
  if (templates === undefined) throw unsupported(`${kindName(row)} objects`);
  return { apiVersion: protobufApiVersion(row), toUpstream: (object, conversion) => templatesToUpstream(object, templates, conversion) };
}

/** The apiserver decodes the object as the kind its envelope names: it must be the kind of the resource. */
function checkKind(envelope: Envelope, row: KindRow, protobufKind: ProtobufKind | undefined, version: string | undefined): void {
  const { apiVersion, kind } = envelope;
  if (kind !== '' && row.kind !== '' && kind !== row.kind) {
    throw badRequest(`the protobuf request body is a ${kind}, but ${row.resource} are ${row.kind}`);
  }
  if (apiVersion !== '' && groupOfApiVersion(apiVersion) !== row.group) {
    throw badRequest(`the protobuf request body's apiVersion ${apiVersion} is not of the group of ${row.resource} (${row.group || 'core'})`);
  }
  if (protobufKind === undefined) return;
  if (apiVersion !== '' && apiVersion !== protobufKind.apiVersion) throw unsupported(`${kindName(row)} ${apiVersion} objects`);
  // Without an apiVersion in the envelope, the apiserver decodes the body as the version of the path.
  const pathApiVersion = version === undefined ? undefined : row.group === '' ? version : `${row.group}/${version}`;
  if (pathApiVersion !== undefined && pathApiVersion !== protobufKind.apiVersion) throw unsupported(`${kindName(row)} ${pathApiVersion} objects`);
}

/** The kind's own rule first, then the metadata: the order of objectToUpstream (a CRD's rule reads its tenant name). */
function wholeObjectToUpstream(raw: Buffer, conversion: Conversion, protobufKind: ProtobufKind | undefined): Buffer {
  const edit = new MessageEdit(protobufKind === undefined ? raw : protobufKind.toUpstream(raw, conversion), 'object');
  const meta = edit.single(1, 'metadata');
  if (meta === undefined) edit.add(1, objectMetaToUpstream(EMPTY, conversion));
  else edit.rewrite(meta, (payload) => objectMetaToUpstream(payload, conversion));
  return edit.finish();
}

/** A subresource's own object (Scale, Eviction, Binding...): only the names in its metadata. */
function subresourceObjectToUpstream(raw: Buffer, conversion: Conversion): Buffer {
  return rewriteAt(raw, [1], 'object', (meta) => {
    const edit = new MessageEdit(meta, 'metadata');
    metaNamesToUpstream(edit, conversion, false);
    return edit.finish();
  });
}

/**
 * The upstream form of a tenant's protobuf request body for `row` (from the table of kinds): namespace and cluster-scoped
 * names prefixed, the tenant label forced on the object and its templates; every other field the kind's JSON rule
 * maps, as that rule maps it. Throws a StatusError: 404/403 for hidden and shared kinds, 415 for kinds (and verbs) only converted as JSON,
 * 422 for names too long once prefixed, 400 for a malformed body.
 */
export function protobufBodyToUpstream(body: Buffer, row: KindRow, tenant: TenantId, options: ProtobufBodyOptions): Buffer {
  const { verb, subresource } = options;
  const refusal = accessRefusal(row, verb, subresource);
  if (refusal !== null) throw refusal;
  if (verb === 'delete' || verb === 'deletecollection') {
    parseEnvelope(body); // DeleteOptions: preconditions and policies, no names
    return body;
  }
  if (verb !== 'create' && verb !== 'update') throw unsupported(`${verb} request bodies`);
  const wholeObject = isWholeObjectSubresource(row, subresource);
  const protobufKind = wholeObject ? protobufKindOf(row) : undefined;
  const envelope = parseEnvelope(body);
  if (wholeObject) checkKind(envelope, row, protobufKind, options.version);
  const { edit, rawField } = envelope;
  const conversion: Conversion = {
    row,
    tenant,
    kindScope: options.kindScope,
    scopeOf: options.scopeOf,
    webhookUrlHosts: options.webhookUrlHosts,
    allowsPlatformClass: options.allowsPlatformClass,
    priorityClasses: options.priorityClasses,
  };
  const raw = rawField === undefined ? EMPTY : edit.payload(rawField);
  const defaults = wholeObject && subresource === '' ? options.defaultPlatformClass : undefined;
  const object = defaults === undefined ? raw : classDefaultsToUpstreamWire(raw, row, defaults);
  const converted = wholeObject ? wholeObjectToUpstream(object, conversion, protobufKind) : subresourceObjectToUpstream(raw, conversion);
  if (converted === raw) return body;
  if (rawField === undefined) edit.add(2, converted);
  else edit.replace(rawField, converted);
  return Buffer.concat([MAGIC, edit.finish()]);
}
