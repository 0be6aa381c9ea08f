// The field numbers the hand-written protobuf rules take by name from the generated schema (field-numbers.ts): each is
// the number of that field in k8s.io/api's and apimachinery's generated.proto, and a name the schema lacks is an error.
import t from 'tap';
import { fieldNumbers, POD_AFFINITY, POD_ANTI_AFFINITY, TAKEN } from '../../lib/convert/protobuf/field-numbers.ts';
import { goModuleCache, loadProtoMessages, type ProtoMessages } from '../helpers/k8s-proto.ts';

const moduleCache = goModuleCache();
const NEEDS_PROTO = {
  skip: moduleCache === undefined ? 'the Go module cache with k8s.io/api v0.36.3 is not on this machine: build the rig first (npm run rig)' : false,
};
const messages: ProtoMessages = moduleCache === undefined ? new Map() : loadProtoMessages(moduleCache);

t.test('every number taken from the generated schema is the one of generated.proto (v0.36.3)', NEEDS_PROTO, async (t) => {
  let checked = 0;
  for (const { message, numbers } of TAKEN) {
    const fields = messages.get(message);
    t.ok(fields !== undefined, `${message} is in generated.proto`);
    for (const [name, number] of Object.entries(numbers)) {
      t.equal(number, fields?.get(name)?.number, `${message}.${name} = ${number}`);
      checked++;
    }
  }
  t.ok(checked >= 40, `${checked} field numbers checked`);
});

t.test('ObjectMeta, OwnerReference, ManagedFieldsEntry and PodSpec are among them', async (t) => {
  const messagesTaken = new Set(TAKEN.map(({ message }) => message.split('.').at(-1)));
  for (const name of ['ObjectMeta', 'OwnerReference', 'ManagedFieldsEntry', 'PodSpec', 'PodAffinityTerm', 'LabelSelector']) {
    t.ok(messagesTaken.has(name), `${name}'s numbers come from the schema`);
  }
});

t.test('PodAffinity and PodAntiAffinity number their terms alike (the pod-spec rule walks both the same way)', async (t) => {
  t.strictSame(POD_ANTI_AFFINITY, POD_AFFINITY);
});

t.test('a message or field the schema lacks is an error, never a guessed number', async (t) => {
  t.throws(() => fieldNumbers('k8s.io.api.core.v1.PodSpec', ['noSuchField']), /no field k8s\.io\.api\.core\.v1\.PodSpec\.noSuchField/);
  t.throws(() => fieldNumbers('k8s.io.api.core.v1.NoSuchMessage', ['name']), /no message k8s\.io\.api\.core\.v1\.NoSuchMessage/);
});
