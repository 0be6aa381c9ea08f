// OpenAPI v2 as protobuf: what kubectl (client-go) asks `/openapi/v2` for, and the only form it reads. The message
// is gnostic's `openapi.v2.Document` (github.com/google/gnostic-models/openapiv2/OpenAPIv2.proto), built from the
// JSON document the way kube-openapi builds it: gnostic's ParseDocument of the JSON, then proto.Marshal. The rules
// of that mapping are data below: for each message, which JSON key fills which field number as what; objects
// whose keys name entries (paths, definitions, properties, response codes, `x-` vendor extensions) become repeated
// Named* messages in the document's order; vendor extensions, defaults, enums and examples keep their value as
// the YAML text gnostic writes (see go-yaml.ts). Fields are written in field-number order, zero values left out
// (proto3), as Go's proto.Marshal does: for a document gnostic parses without error (kube-openapi serves no other)
// the bytes are the ones kube-openapi would serve. Oneofs are decided by the keys gnostic tells them apart by, not
// by its full validation; values of a shape gnostic would refuse are left out, never a crash.
import { goYaml, jsonScalarText } from '../go-yaml.ts';
import { ProtobufWriter } from './writer.ts';

/** The type kube-openapi answers with (it also accepts the older `...spec.v2@v1.0+protobuf` in Accept). */
export const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';
const OPENAPI_V2_PROTOBUF_TYPES = new Set([OPENAPI_V2_PROTOBUF, 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf']);
const JSON_TYPES = new Set(['application/json', 'application/*', '*/*']);

/**
 * True when an Accept header takes OpenAPI v2 as protobuf before JSON, as kube-openapi negotiates it: the media
 * ranges by quality, then specific before wildcard; the first that names JSON or protobuf decides.
 */
export function prefersOpenApiV2Protobuf(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const ranges = accept.split(',').map((part, order) => {
    const [type = '', ...parameters] = part.split(';').map((piece) => piece.trim());
    const quality = parameters.find((parameter) => /^q=/i.test(parameter));
    const q = quality === undefined ? 1 : Number(quality.slice(2));
    return { type: type.toLowerCase(), q: Number.isNaN(q) ? 0 : q, wildcards: (type.match(/\*/g) ?? []).length, order };
  });
  ranges.sort((a, b) => b.q - a.q || a.wildcards - b.wildcards || a.order - b.order);
  for (const range of ranges) {
    if (range.q <= 0) continue;
    if (OPENAPI_V2_PROTOBUF_TYPES.has(range.type)) return true;
    if (JSON_TYPES.has(range.type)) return false;
  }
  return false;
}

// ---- the rules: gnostic's messages, their fields and the JSON they come from ----

type MessageName =
  | 'Document'
  | 'Info'
  | 'Contact'
  | 'License'
  | 'ExternalDocs'
  | 'Tag'
  | 'Paths'
  | 'PathItem'
  | 'Operation'
  | 'ParametersItem'
  | 'Parameter'
  | 'NonBodyParameter'
  | 'BodyParameter'
  | 'HeaderParameterSubSchema'
  | 'FormDataParameterSubSchema'
  | 'QueryParameterSubSchema'
  | 'PathParameterSubSchema'
  | 'PrimitivesItems'
  | 'JsonReference'
  | 'Responses'
  | 'ResponseValue'
  | 'Response'
  | 'SchemaItem'
  | 'FileSchema'
  | 'Header'
  | 'Headers'
  | 'Examples'
  | 'Definitions'
  | 'Properties'
  | 'ParameterDefinitions'
  | 'ResponseDefinitions'
  | 'Schema'
  | 'AdditionalPropertiesItem'
  | 'TypeItem'
  | 'ItemsItem'
  | 'Xml'
  | 'SecurityRequirement'
  | 'StringArray'
  | 'SecurityDefinitions'
  | 'SecurityDefinitionsItem'
  | 'BasicAuthenticationSecurity'
  | 'ApiKeySecurity'
  | 'Oauth2ImplicitSecurity'
  | 'Oauth2PasswordSecurity'
  | 'Oauth2ApplicationSecurity'
  | 'Oauth2AccessCodeSecurity'
  | 'Oauth2Scopes';

/**
 * How a JSON value becomes a field: `string`, `bool`, `double`, `int64` scalars (as gnostic's StringForScalarNode
 * and friends read them), `strings` (a repeated string from an array), `any` (an `Any` holding the value's YAML),
 * `anys` (repeated), a message, or `<message>[]` (repeated, from an array).
 */
type Kind = 'string' | 'bool' | 'double' | 'int64' | 'strings' | 'any' | 'anys' | MessageName | `${MessageName}[]`;

/** Object entries whose keys pass `keys`, as repeated `Named*` messages {name = 1; value = 2}, at `number`. */
interface NamedEntries {
  readonly number: number;
  readonly keys: (key: string) => boolean;
  readonly value: Kind;
}

interface Message {
  /** JSON key → [field number, kind]. */
  readonly fields?: Readonly<Record<string, readonly [number, Kind]>>;
  readonly named?: readonly NamedEntries[];
  /**
   * A oneof: the field a JSON value fills, as gnostic decides it (it tries each alternative in order and keeps the
   * last one that parses without error); null leaves the message empty. A scalar alternative is written even when
   * zero (a oneof member has presence).
   */
  readonly oneof?: (value: unknown) => readonly [number, Kind] | null;
}

const everyKey = () => true;
const isExtension = (key: string) => key.startsWith('x-');
const extensions = (number: number): NamedEntries => ({ number, keys: isExtension, value: 'any' });
const allEntries = (value: Kind): readonly NamedEntries[] => [{ number: 1, keys: everyKey, value }];
const RESPONSE_CODE = /^([0-9]{3})$|^(default)$/;

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** gnostic takes a map with a string `$ref` as a JSON reference (tried last, it wins over the other alternative). */
function isReference(value: unknown): boolean {
  return isJsonObject(value) && typeof value.$ref === 'string';
}

/** The fields every primitive-typed parameter, header and items share, from `first` on (type, format, items...). */
function primitiveFields(first: number, itemsKind: Kind = 'PrimitivesItems'): Record<string, readonly [number, Kind]> {
  const names: [string, Kind][] = [
    ['type', 'string'],
    ['format', 'string'],
    ['items', itemsKind],
    ['collectionFormat', 'string'],
    ['default', 'any'],
    ['maximum', 'double'],
    ['exclusiveMaximum', 'bool'],
    ['minimum', 'double'],
    ['exclusiveMinimum', 'bool'],
    ['maxLength', 'int64'],
    ['minLength', 'int64'],
    ['pattern', 'string'],
    ['maxItems', 'int64'],
    ['minItems', 'int64'],
    ['uniqueItems', 'bool'],
    ['enum', 'anys'],
    ['multipleOf', 'double'],
  ];
  return Object.fromEntries(names.map(([name, kind], i) => [name, [first + i, kind] as const]));
}

/** Header and path parameters: required, in, description, name, then the primitive fields, extensions at 22. */
const HEADER_OR_PATH_PARAMETER: Message = {
  fields: { required: [1, 'bool'], in: [2, 'string'], description: [3, 'string'], name: [4, 'string'], ...primitiveFields(5) },
  named: [extensions(22)],
};
/** Query and form parameters add allowEmptyValue at 5, which moves the rest by one. */
const QUERY_OR_FORM_PARAMETER: Message = {
  fields: { required: [1, 'bool'], in: [2, 'string'], description: [3, 'string'], name: [4, 'string'], allowEmptyValue: [5, 'bool'], ...primitiveFields(6) },
  named: [extensions(23)],
};

const NON_BODY_PARAMETERS: Record<string, readonly [number, MessageName]> = {
  header: [1, 'HeaderParameterSubSchema'],
  formData: [2, 'FormDataParameterSubSchema'],
  query: [3, 'QueryParameterSubSchema'],
  path: [4, 'PathParameterSubSchema'],
};

const FILE_SCHEMA_KEYS = new Set(['format', 'title', 'description', 'default', 'required', 'type', 'readOnly', 'externalDocs', 'example']);

const OAUTH2_FLOWS: Record<string, readonly [number, MessageName]> = {
  implicit: [3, 'Oauth2ImplicitSecurity'],
  password: [4, 'Oauth2PasswordSecurity'],
  application: [5, 'Oauth2ApplicationSecurity'],
  accessCode: [6, 'Oauth2AccessCodeSecurity'],
};

const MESSAGES: Record<MessageName, Message> = {
  Document: {
    fields: {
      swagger: [1, 'string'],
      info: [2, 'Info'],
      host: [3, 'string'],
      basePath: [4, 'string'],
      schemes: [5, 'strings'],
      consumes: [6, 'strings'],
      produces: [7, 'strings'],
      paths: [8, 'Paths'],
      definitions: [9, 'Definitions'],
      parameters: [10, 'ParameterDefinitions'],
      responses: [11, 'ResponseDefinitions'],
      security: [12, 'SecurityRequirement[]'],
      securityDefinitions: [13, 'SecurityDefinitions'],
      tags: [14, 'Tag[]'],
      externalDocs: [15, 'ExternalDocs'],
    },
    named: [extensions(16)],
  },
  Info: {
    fields: {
      title: [1, 'string'],
      version: [2, 'string'],
      description: [3, 'string'],
      termsOfService: [4, 'string'],
      contact: [5, 'Contact'],
      license: [6, 'License'],
    },
    named: [extensions(7)],
  },
  Contact: { fields: { name: [1, 'string'], url: [2, 'string'], email: [3, 'string'] }, named: [extensions(4)] },
  License: { fields: { name: [1, 'string'], url: [2, 'string'] }, named: [extensions(3)] },
  ExternalDocs: { fields: { description: [1, 'string'], url: [2, 'string'] }, named: [extensions(3)] },
  Tag: { fields: { name: [1, 'string'], description: [2, 'string'], externalDocs: [3, 'ExternalDocs'] }, named: [extensions(4)] },
  Paths: { named: [extensions(1), { number: 2, keys: (key) => key.startsWith('/'), value: 'PathItem' }] },
  PathItem: {
    fields: {
      $ref: [1, 'string'],
      get: [2, 'Operation'],
      put: [3, 'Operation'],
      post: [4, 'Operation'],
      delete: [5, 'Operation'],
      options: [6, 'Operation'],
      head: [7, 'Operation'],
      patch: [8, 'Operation'],
      parameters: [9, 'ParametersItem[]'],
    },
    named: [extensions(10)],
  },
  Operation: {
    fields: {
      tags: [1, 'strings'],
      summary: [2, 'string'],
      description: [3, 'string'],
      externalDocs: [4, 'ExternalDocs'],
      operationId: [5, 'string'],
      produces: [6, 'strings'],
      consumes: [7, 'strings'],
      parameters: [8, 'ParametersItem[]'],
      responses: [9, 'Responses'],
      schemes: [10, 'strings'],
      deprecated: [11, 'bool'],
      security: [12, 'SecurityRequirement[]'],
    },
    named: [extensions(13)],
  },
  ParametersItem: { oneof: (value) => (isReference(value) ? [2, 'JsonReference'] : isJsonObject(value) ? [1, 'Parameter'] : null) },
  Parameter: { oneof: (value) => (!isJsonObject(value) ? null : value.in === 'body' ? [1, 'BodyParameter'] : [2, 'NonBodyParameter']) },
  NonBodyParameter: { oneof: (value) => (isJsonObject(value) && typeof value.in === 'string' ? (NON_BODY_PARAMETERS[value.in] ?? null) : null) },
  BodyParameter: {
    fields: { description: [1, 'string'], name: [2, 'string'], in: [3, 'string'], required: [4, 'bool'], schema: [5, 'Schema'] },
    named: [extensions(6)],
  },
  HeaderParameterSubSchema: HEADER_OR_PATH_PARAMETER,
  PathParameterSubSchema: HEADER_OR_PATH_PARAMETER,
  FormDataParameterSubSchema: QUERY_OR_FORM_PARAMETER,
  QueryParameterSubSchema: QUERY_OR_FORM_PARAMETER,
  PrimitivesItems: { fields: primitiveFields(1), named: [extensions(18)] },
  Header: { fields: { ...primitiveFields(1), description: [18, 'string'] }, named: [extensions(19)] },
  JsonReference: { fields: { $ref: [1, 'string'], description: [2, 'string'] } },
  Responses: { named: [{ number: 1, keys: (key) => RESPONSE_CODE.test(key), value: 'ResponseValue' }, extensions(2)] },
  ResponseValue: { oneof: (value) => (isReference(value) ? [2, 'JsonReference'] : isJsonObject(value) ? [1, 'Response'] : null) },
  Response: {
    fields: { description: [1, 'string'], schema: [2, 'SchemaItem'], headers: [3, 'Headers'], examples: [4, 'Examples'] },
    named: [extensions(5)],
  },
  // A schema of type file with only a file schema's keys parses as both; the file schema, tried last, wins.
  SchemaItem: {
    oneof: (value) =>
      !isJsonObject(value)
        ? null
        : value.type === 'file' && Object.keys(value).every((key) => FILE_SCHEMA_KEYS.has(key) || isExtension(key))
          ? [2, 'FileSchema']
          : [1, 'Schema'],
  },
  FileSchema: {
    fields: {
      format: [1, 'string'],
      title: [2, 'string'],
      description: [3, 'string'],
      default: [4, 'any'],
      required: [5, 'strings'],
      type: [6, 'string'],
      readOnly: [7, 'bool'],
      externalDocs: [8, 'ExternalDocs'],
      example: [9, 'any'],
    },
    named: [extensions(10)],
  },
  Headers: { named: allEntries('Header') },
  Examples: { named: allEntries('any') },
  Definitions: { named: allEntries('Schema') },
  Properties: { named: allEntries('Schema') },
  ParameterDefinitions: { named: allEntries('Parameter') },
  ResponseDefinitions: { named: allEntries('Response') },
  Schema: {
    fields: {
      $ref: [1, 'string'],
      format: [2, 'string'],
      title: [3, 'string'],
      description: [4, 'string'],
      default: [5, 'any'],
      multipleOf: [6, 'double'],
      maximum: [7, 'double'],
      exclusiveMaximum: [8, 'bool'],
      minimum: [9, 'double'],
      exclusiveMinimum: [10, 'bool'],
      maxLength: [11, 'int64'],
      minLength: [12, 'int64'],
      pattern: [13, 'string'],
      maxItems: [14, 'int64'],
      minItems: [15, 'int64'],
      uniqueItems: [16, 'bool'],
      maxProperties: [17, 'int64'],
      minProperties: [18, 'int64'],
      required: [19, 'strings'],
      enum: [20, 'anys'],
      additionalProperties: [21, 'AdditionalPropertiesItem'],
      type: [22, 'TypeItem'],
      items: [23, 'ItemsItem'],
      allOf: [24, 'Schema[]'],
      properties: [25, 'Properties'],
      discriminator: [26, 'string'],
      readOnly: [27, 'bool'],
      xml: [28, 'Xml'],
      externalDocs: [29, 'ExternalDocs'],
      example: [30, 'any'],
    },
    named: [extensions(31)],
  },
  AdditionalPropertiesItem: { oneof: (value) => (isJsonObject(value) ? [1, 'Schema'] : typeof value === 'boolean' ? [2, 'bool'] : null) },
  // TypeItem, ItemsItem and StringArray are not read from an object's keys: see writeSpecialMessageBody.
  TypeItem: {},
  ItemsItem: {},
  StringArray: {},
  Xml: {
    fields: { name: [1, 'string'], namespace: [2, 'string'], prefix: [3, 'string'], attribute: [4, 'bool'], wrapped: [5, 'bool'] },
    named: [extensions(6)],
  },
  SecurityRequirement: { named: allEntries('StringArray') },
  SecurityDefinitions: { named: allEntries('SecurityDefinitionsItem') },
  SecurityDefinitionsItem: {
    oneof: (value) =>
      !isJsonObject(value)
        ? null
        : value.type === 'basic'
          ? [1, 'BasicAuthenticationSecurity']
          : value.type === 'apiKey'
            ? [2, 'ApiKeySecurity']
            : value.type === 'oauth2' && typeof value.flow === 'string'
              ? (OAUTH2_FLOWS[value.flow] ?? null)
              : null,
  },
  BasicAuthenticationSecurity: { fields: { type: [1, 'string'], description: [2, 'string'] }, named: [extensions(3)] },
  ApiKeySecurity: { fields: { type: [1, 'string'], name: [2, 'string'], in: [3, 'string'], description: [4, 'string'] }, named: [extensions(5)] },
  Oauth2ImplicitSecurity: {
    fields: { type: [1, 'string'], flow: [2, 'string'], scopes: [3, 'Oauth2Scopes'], authorizationUrl: [4, 'string'], description: [5, 'string'] },
    named: [extensions(6)],
  },
  Oauth2PasswordSecurity: {
    fields: { type: [1, 'string'], flow: [2, 'string'], scopes: [3, 'Oauth2Scopes'], tokenUrl: [4, 'string'], description: [5, 'string'] },
    named: [extensions(6)],
  },
  Oauth2ApplicationSecurity: {
    fields: { type: [1, 'string'], flow: [2, 'string'], scopes: [3, 'Oauth2Scopes'], tokenUrl: [4, 'string'], description: [5, 'string'] },
    named: [extensions(6)],
  },
  Oauth2AccessCodeSecurity: {
    fields: {
      type: [1, 'string'],
      flow: [2, 'string'],
      scopes: [3, 'Oauth2Scopes'],
      authorizationUrl: [4, 'string'],
      tokenUrl: [5, 'string'],
      description: [6, 'string'],
    },
    named: [extensions(7)],
  },
  Oauth2Scopes: { named: allEntries('string') },
};

/** One step of writing a message: a field from a JSON key, or the named entries of the object's keys. */
type Step = { readonly number: number; readonly key: string; readonly kind: Kind } | ({ readonly key?: undefined } & NamedEntries);

/** Each message's steps in field-number order (the order Go's proto.Marshal writes). */
const STEPS = new Map<MessageName, readonly Step[]>(
  Object.entries(MESSAGES).map(([name, message]) => {
    const steps: Step[] = [...Object.entries(message.fields ?? {}).map(([key, [number, kind]]) => ({ number, key, kind })), ...(message.named ?? [])];
    return [name as MessageName, steps.sort((a, b) => a.number - b.number)];
  }),
);

// ---- JSON values read as gnostic reads the YAML node of the same JSON ----

/** JSON.stringify leaves such values out of objects (and writes null for them in arrays). */
function isAbsent(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** The integer a number's JSON text holds when go-yaml tags it !!int (digits only, within int64 or uint64). */
function yamlInteger(value: unknown): bigint | null {
  if (typeof value !== 'number' || !Number.isInteger(value) || Math.abs(value) >= 1e21) return null; // 1e21 and up: exponent, a float
  const integer = BigInt(jsonScalarText(value));
  return integer >= INT64_MIN && integer <= UINT64_MAX ? integer : null;
}

/** gnostic's StringForScalarNode: strings, integers as their text, null as ''; anything else is not a string. */
function stringOf(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (value === null) return '';
  return yamlInteger(value) === null ? null : jsonScalarText(value);
}

function writeField(writer: ProtobufWriter, number: number, kind: Kind, value: unknown, present = false): void {
  switch (kind) {
    case 'string': {
      const text = stringOf(value);
      if (text !== null && (text !== '' || present)) writer.string(number, text);
      return;
    }
    case 'bool':
      if (typeof value === 'boolean' && (value || present)) writer.bool(number, value);
      return;
    case 'double':
      // (-0 too: JSON.stringify writes it as 0.)
      if (typeof value === 'number' && Number.isFinite(value) && (value !== 0 || present)) writer.double(number, value === 0 ? 0 : value);
      return;
    case 'int64': {
      const integer = yamlInteger(value);
      if (integer !== null && integer <= INT64_MAX && (integer !== 0n || present)) writer.int64(number, integer);
      return;
    }
    case 'strings':
      if (!Array.isArray(value)) return;
      for (const item of value) {
        const text = stringOf(isAbsent(item) ? null : item);
        if (text !== null) writer.string(number, text);
      }
      return;
    case 'any':
      writeAny(writer, number, value);
      return;
    case 'anys':
      if (Array.isArray(value)) for (const item of value) writeAny(writer, number, isAbsent(item) ? null : item);
      return;
  }
  if (kind.endsWith('[]')) {
    if (!Array.isArray(value)) return;
    const message = kind.slice(0, -2) as MessageName;
    for (const item of value) writeMessage(writer, number, message, isAbsent(item) ? null : item);
    return;
  }
  writeMessage(writer, number, kind as MessageName, value);
}

/** An `Any` {yaml = 2}: the value as gnostic's YAML text. */
function writeAny(writer: ProtobufWriter, number: number, value: unknown): void {
  const start = writer.begin(number);
  writer.string(2, goYaml(value));
  writer.end(start);
}

const SPECIAL_MESSAGES = new Set<MessageName>(['TypeItem', 'ItemsItem', 'StringArray']);

/** Whether `value` can be read as the message: a oneof always (it may stay empty), most others from an object only. */
function readsAs(name: MessageName, value: unknown): boolean {
  if (MESSAGES[name].oneof !== undefined) return true;
  if (name === 'TypeItem') return !isJsonObject(value);
  if (name === 'StringArray') return Array.isArray(value);
  return isJsonObject(value);
}

/** A message field; values gnostic could not read as that message are left out. */
function writeMessage(writer: ProtobufWriter, number: number, name: MessageName, value: unknown): void {
  if (!readsAs(name, value)) return;
  const start = writer.begin(number);
  const oneof = MESSAGES[name].oneof;
  if (oneof !== undefined) {
    const choice = oneof(value);
    if (choice !== null) writeField(writer, choice[0], choice[1], value, true);
  } else if (SPECIAL_MESSAGES.has(name)) {
    writeSpecialMessageBody(writer, name, value);
  } else {
    writeMessageBody(writer, name, value as Record<string, unknown>);
  }
  writer.end(start);
}

function writeMessageBody(writer: ProtobufWriter, name: MessageName, value: Record<string, unknown>): void {
  for (const step of STEPS.get(name)!) {
    if (step.key !== undefined) {
      const field = Object.hasOwn(value, step.key) ? value[step.key] : undefined;
      if (!isAbsent(field)) writeField(writer, step.number, step.kind, field);
      continue;
    }
    const valueMessage = step.value in MESSAGES ? (step.value as MessageName) : null;
    for (const key of Object.keys(value)) {
      const entry = value[key];
      // (An entry whose value cannot be read is left out whole: a Named* message without a value helps no one.)
      if (isAbsent(entry) || !step.keys(key) || (valueMessage !== null && !readsAs(valueMessage, entry))) continue;
      const start = writer.begin(step.number);
      if (key !== '') writer.string(1, key);
      writeField(writer, 2, step.value, entry);
      writer.end(start);
    }
  }
}

/**
 * TypeItem {repeated string value = 1}: `type` as one name or a list of names (each scalar's text).
 * ItemsItem {repeated Schema schema = 1}: `items` as one schema (gnostic refuses a list of schemas).
 * StringArray {repeated string value = 1}: a security requirement's scopes (what is not a string counts as '').
 */
function writeSpecialMessageBody(writer: ProtobufWriter, name: MessageName, value: unknown): void {
  if (name === 'ItemsItem') {
    writeMessage(writer, 1, 'Schema', value);
    return;
  }
  for (const item of Array.isArray(value) ? value : [value]) {
    if (name === 'StringArray') writer.string(1, stringOf(isAbsent(item) ? null : item) ?? '');
    else if (typeof item === 'string') writer.string(1, item);
    else if (item === null || typeof item !== 'object') writer.string(1, jsonScalarText(isAbsent(item) ? null : item));
  }
}

/**
 * The protobuf `openapi.v2.Document` of an OpenAPI v2 document (the parsed JSON), as kube-openapi would serve it
 * for that JSON. `sizeHint`: the expected size in bytes (the JSON's length is a fair one), to grow the buffer less.
 */
export function openapiV2ToProtobuf(document: Record<string, unknown>, sizeHint = 1 << 20): Buffer {
  const writer = new ProtobufWriter(sizeHint);
  writeMessageBody(writer, 'Document', document);
  return writer.bytes();
}
