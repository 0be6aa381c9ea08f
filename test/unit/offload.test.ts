// Documents converted on a worker thread come back exactly as the inline conversion makes them, and a broken one
// comes back as the Status error the inline conversion would throw.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { openapiV2ToTenant } from '../../lib/convert/openapi.ts';
import { openapiV2ToProtobuf } from '../../lib/convert/openapi-v2-protobuf.ts';
import { closeOffload, convertOffThread } from '../../lib/request/offload.ts';
import { StatusError } from '../../lib/errors/status-error.ts';

const FIXTURE = readFileSync(new URL('../fixtures/openapi-v2.json', import.meta.url));
t.teardown(() => closeOffload());

t.test('the worker\'s view of an OpenAPI v2 document is the inline one', async (t) => {
  const inline = JSON.stringify(openapiV2ToTenant(JSON.parse(FIXTURE.toString('utf8')), 'alpha1'));
  const body = Buffer.from(FIXTURE); // its own memory: moved to the worker, not copied
  const viaWorker = await convertOffThread({ kind: 'openapi-v2', tenant: 'alpha1', body, protobuf: false });
  t.equal(viaWorker.toString('utf8'), inline);
  const small = Buffer.from('{"swagger":"2.0","paths":{}}'); // a pooled Buffer: copied, the pool's memory stays
  await convertOffThread({ kind: 'openapi-v2', tenant: 'alpha1', body: small, protobuf: false });
  t.equal(small.toString(), '{"swagger":"2.0","paths":{}}', 'a Buffer sharing pooled memory is still readable afterwards');
  const protobuf = await convertOffThread({ kind: 'openapi-v2', tenant: 'alpha1', body: Buffer.from(FIXTURE), protobuf: true });
  t.same(protobuf, openapiV2ToProtobuf(JSON.parse(inline)), 'and as protobuf, the inline encoding of the same view');
});

t.test('a broken document is a 502 Status, not a crash of the worker', async (t) => {
  for (const broken of ['not json', '{"swagger":"2.0"}']) {
    const error = await convertOffThread({ kind: 'openapi-v2', tenant: 'alpha1', body: Buffer.from(broken), protobuf: false }).catch((e: unknown) => e);
    t.ok(error instanceof StatusError && error.code === 502, `${broken}: ${(error as Error).message}`);
  }
});
