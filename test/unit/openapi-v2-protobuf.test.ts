// OpenAPI v2 as the protobuf kubectl reads. openapi-v2-every-field.json uses every message and field of gnostic's
// openapi.v2.Document; openapi-v2-every-field.pb is what gnostic-models v0.7.1 made of it (openapi_v2.ParseDocument
// of JSON.stringify(JSON.parse(fixture)), then proto.Marshal: kube-openapi's ToProtoBinary). The tenant's view of
// the 1.36 fixture is read back with the small wire reader below.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { openapiV2ToTenant } from '../../lib/convert/openapi.ts';
import { openapiV2ToProtobuf, prefersOpenApiV2Protobuf } from '../../lib/convert/protobuf/openapi-v2.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/${name}`, import.meta.url));
const KUBECTL_ACCEPT = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';

// ---- a protobuf wire reader, enough for length-delimited fields ----

/** The length-delimited fields of a message, by field number, in order (varints and fixed fields skipped). */
function fieldsOf(message: Buffer): Map<number, Buffer[]> {
  const fields = new Map<number, Buffer[]>();
  let at = 0;
  const varint = () => {
    let value = 0;
    for (let scale = 1; ; scale *= 128) {
      const byte = message[at++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
    }
  };
  while (at < message.length) {
    const tag = varint();
    const wireType = tag & 7;
    if (wireType === 0) varint();
    else if (wireType === 1) at += 8;
    else if (wireType === 5) at += 4;
    else if (wireType === 2) {
      const length = varint();
      const list = fields.get(tag >>> 3) ?? [];
      list.push(message.subarray(at, at + length));
      fields.set(tag >>> 3, list);
      at += length;
    } else throw new Error(`wire type ${wireType} at ${at}`);
  }
  return fields;
}

/** The one message (or string) at `number`. */
function field(message: Buffer, number: number): Buffer {
  const values = fieldsOf(message).get(number);
  if (values?.length !== 1) throw new Error(`field ${number}: ${values?.length ?? 0} values`);
  return values[0]!;
}

const text = (message: Buffer, number: number) => field(message, number).toString('utf8');

/** Repeated Named* messages {name = 1; value = 2} at `number`, by name. */
function named(message: Buffer, number: number): Map<string, Buffer> {
  return new Map((fieldsOf(message).get(number) ?? []).map((entry) => [text(entry, 1), field(entry, 2)]));
}

// Field numbers of OpenAPIv2.proto used below.
const DOCUMENT = { paths: 8, definitions: 9 };
const PATHS_PATH = 2;
const PATH_ITEM_GET = 2;
const OPERATION = { operationId: 5, parameters: 8, responses: 9, extensions: 13 };
const RESPONSES_CODE = 1;
const SCHEMA = { ref: 1, extensions: 31 };
const ANY_YAML = 2;

t.test('every field of the Document, byte for byte as gnostic encodes it', async (t) => {
  const document = JSON.parse(fixture('openapi-v2-every-field.json').toString('utf8'));
  t.ok(openapiV2ToProtobuf(document).equals(fixture('openapi-v2-every-field.pb')), 'the same bytes as gnostic-models v0.7.1');
});

t.test("the tenant's view decodes to its paths, schemas, references and vendor extensions", async (t) => {
  const view = openapiV2ToTenant(JSON.parse(fixture('openapi-v2.json').toString('utf8')), 'alpha1');
  const bytes = openapiV2ToProtobuf(view);

  const paths = named(field(bytes, DOCUMENT.paths), PATHS_PATH);
  const widget = paths.get('/apis/example.com/v1/namespaces/{namespace}/widgets/{name}');
  t.ok(widget, "alpha1's widget path, under its own group");
  const get = field(widget!, PATH_ITEM_GET);
  t.equal(text(get, OPERATION.operationId), 'readExampleComV1NamespacedWidget');
  t.equal(text(named(get, OPERATION.extensions).get('x-kubernetes-action')!, ANY_YAML), 'get\n', 'a vendor extension keeps its value as YAML');
  const parameter = fieldsOf(get).get(OPERATION.parameters)![0]!;
  t.equal(text(field(parameter, 2 /* json_reference */), 1), '#/parameters/resourceVersion-5WAnf1kx', 'a parameter $ref');
  const ok = field(named(field(get, OPERATION.responses), RESPONSES_CODE).get('200')!, 1 /* response */);
  const schema = field(field(ok, 2 /* schema */), 1 /* schema */);
  t.equal(text(schema, SCHEMA.ref), '#/definitions/com.example.v1.Widget', "a response schema $ref, to the tenant's name");

  const definitions = named(field(bytes, DOCUMENT.definitions), 1);
  const definition = definitions.get('com.example.v1.Widget');
  t.ok(definition, "alpha1's Widget schema, under its own name");
  t.equal(
    text(named(definition!, SCHEMA.extensions).get('x-kubernetes-group-version-kind')!, ANY_YAML),
    '- group: example.com\n  kind: Widget\n  version: v1\n',
    "its group-version-kind names the tenant's group",
  );
  t.ok(definitions.has('io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'), 'shared schemas stay');
  t.notOk(bytes.includes('bravo2'), 'nothing of the other tenant');
  t.notOk(bytes.includes('alpha1-'), "nor of the tenant's own prefix");
});

t.test("kubectl's Accept asks protobuf; JSON, wildcards and lower qualities do not", async (t) => {
  t.ok(prefersOpenApiV2Protobuf(KUBECTL_ACCEPT));
  t.ok(prefersOpenApiV2Protobuf('application/com.github.proto-openapi.spec.v2.v1.0+protobuf'));
  t.ok(prefersOpenApiV2Protobuf(`application/json;q=0.5, ${KUBECTL_ACCEPT}`));
  t.notOk(prefersOpenApiV2Protobuf(undefined));
  t.notOk(prefersOpenApiV2Protobuf('application/json'));
  t.notOk(prefersOpenApiV2Protobuf('*/*'));
  t.notOk(prefersOpenApiV2Protobuf(`application/json, ${KUBECTL_ACCEPT}`));
  t.notOk(prefersOpenApiV2Protobuf(`${KUBECTL_ACCEPT};q=0, application/json`));
});

t.test('a malformed document encodes what it can and never throws', async (t) => {
  const malformed = {
    swagger: 2,
    info: [],
    paths: { '/a': 5, '/b': { get: 'no', parameters: [7, null, { in: 'nowhere' }] }, '/c': { post: { responses: { '200': [], default: null } } } },
    definitions: {
      A: {
        type: 7,
        items: [1],
        additionalProperties: 'x',
        enum: 'no',
        required: [1, true, null, {}],
        maxLength: 1.5,
        minLength: 2 ** 70,
        default: undefined,
        properties: { b: null },
      },
      B: null,
    },
    parameters: 'none',
    security: [{ key: 'scope' }, 1],
    'x-odd': () => 1,
  };
  const bytes = openapiV2ToProtobuf(malformed as unknown as Record<string, unknown>);
  t.ok(named(field(bytes, DOCUMENT.paths), PATHS_PATH).has('/c'), 'the paths that are objects are there');
  t.same([...named(field(bytes, DOCUMENT.definitions), 1).keys()], ['A'], 'so are the schemas that are objects');
});
