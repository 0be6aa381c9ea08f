// Which clients read nothing but protobuf (their Status errors must come in protobuf; a custom resource, served as JSON
// only, is refused to them as the apiserver refuses it): client-go's protobuf-first Accept still falls back to JSON.
import t from 'tap';
import { acceptsAnAnsweredType, acceptsOnlyProtobuf, prefersProtobuf } from '../../lib/request/negotiation.ts';

t.test('protobuf only, with or without parameters', async (t) => {
  for (const accept of [
    'application/vnd.kubernetes.protobuf',
    'application/vnd.kubernetes.protobuf;stream=watch',
    'Application/Vnd.Kubernetes.Protobuf',
    'application/vnd.kubernetes.protobuf, application/vnd.kubernetes.protobuf;stream=watch',
  ]) {
    t.ok(acceptsOnlyProtobuf(accept), accept);
    t.ok(prefersProtobuf(accept), `${accept}: prefers protobuf too`);
  }
});

t.test('a JSON fallback, a wildcard, a Table or metadata form, or no Accept is not protobuf only', async (t) => {
  for (const accept of [
    undefined,
    '',
    'application/vnd.kubernetes.protobuf, application/json',
    'application/vnd.kubernetes.protobuf, */*',
    'application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1',
    'application/json',
    '*/*',
  ]) {
    t.notOk(acceptsOnlyProtobuf(accept), String(accept));
  }
});

t.test('what tenantgate answers in: JSON, YAML, protobuf or any type, as the apiserver with CBOR serving off', async (t) => {
  for (const accept of [
    undefined,
    '',
    'application/json',
    'application/json;q=0.9,application/cbor;q=1',
    'application/json;as=Table;v=v1;g=meta.k8s.io,application/json',
    'application/vnd.kubernetes.protobuf;stream=watch',
    'application/yaml',
    'text/html, */*',
    'Application/JSON',
  ]) {
    t.ok(acceptsAnAnsweredType(accept), String(accept));
  }
  for (const accept of [
    'application/cbor',
    'application/cbor-seq',
    'application/cbor;as=Table;v=v1;g=meta.k8s.io',
    'text/html',
    'application/*',
    'text/*',
    ';;,',
  ]) {
    t.notOk(acceptsAnAnsweredType(accept), `${accept}: 406`);
  }
});
