// The tenant's PartialObjectMetadata(List) in the apiserver's protobuf: which Accept headers ask for it, and that the
// bytes decode (with the .proto files of k8s.io/apimachinery) to exactly the JSON view, items without kind.
import t from 'tap';
import { partialObjectMetadataListToProtobuf, preferredPartialMetadataProtobuf } from '../../lib/convert/protobuf/partial-metadata.ts';
import { decodeBody, goModuleCache, loadProtoMessages } from '../helpers/k8s-proto.ts';

t.test('only a first choice of protobuf as=PartialObjectMetadata(List) of meta.k8s.io/v1 asks for it', async (t) => {
  for (const [accept, wanted] of [
    ['application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json', 'PartialObjectMetadataList'],
    ['application/vnd.kubernetes.protobuf; as=PartialObjectMetadata; g=meta.k8s.io; v=v1', 'PartialObjectMetadata'],
    [
      'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1',
      null,
    ],
    ['application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1', null],
    ['application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1', null],
    ['application/vnd.kubernetes.protobuf', null],
    [undefined, null],
  ] as const) {
    t.equal(preferredPartialMetadataProtobuf(accept), wanted, String(accept));
  }
});

const moduleCache = goModuleCache();
t.test('a list decodes to the JSON view', { skip: moduleCache === undefined ? 'no Go module cache' : false }, async (t) => {
  const messages = loadProtoMessages(moduleCache!);
  const metadata = {
    name: 'a',
    namespace: 'default',
    uid: 'u-1',
    resourceVersion: '7',
    generation: 3,
    creationTimestamp: '2026-11-26T01:00:00Z',
    labels: { x: 'y', ü: 'é' },
    annotations: { note: 'a'.repeat(300) },
    ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'o', uid: 'u-0', controller: true, blockOwnerDeletion: false }],
    finalizers: ['f/one', 'f/two'],
    managedFields: [
      { manager: 'm', operation: 'Apply', apiVersion: 'v1', time: '2026-11-26T01:00:01Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': {} } },
    ],
  };
  const list = {
    apiVersion: 'meta.k8s.io/v1',
    kind: 'PartialObjectMetadataList',
    metadata: { resourceVersion: '9', continue: 'c', remainingItemCount: 2 },
    items: [{ apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadata', metadata }],
  };
  const decoded: any = decodeBody(messages, 'k8s.io.apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList', partialObjectMetadataListToProtobuf(list));
  // (The decoder reads FieldsV1 as the JSON it carries, as it reads RawExtension.)
  t.same(decoded, { ...list, items: [{ metadata }] });
});
