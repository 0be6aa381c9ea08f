// Objects the tests create, in one place.
import type { ClientHttp2Session } from 'node:http2';
import { h2Request } from './http.ts';

/** A namespaced CRD in group example.com, version v1, that keeps any spec. */
export function exampleCrd(kind: string, plural: string) {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.example.com` },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } } },
        },
      ],
    },
  };
}

/** A one-replica nginx Deployment labelled app=web. */
export function webDeployment(name: string, namespace: string) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace, labels: { app: 'web' } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } },
    },
  };
}

/**
 * Creates a custom resource at `path` (its collection) over `session`, trying again while its CRD, created just
 * before, is being established (the apiserver answers 404 until then); throws after about 10 s.
 */
export async function createOnceServed(
  session: ClientHttp2Session,
  path: string,
  object: { apiVersion: string; kind: string; metadata: { name: string }; spec?: unknown },
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const answer = await h2Request(session, 'POST', path, { headers: { 'content-type': 'application/json' }, body: JSON.stringify(object) });
    if (answer.status === 201) return;
    if (attempt > 50) throw new Error(`${object.kind} ${object.metadata.name}: ${answer.status} ${answer.body}`);
    await new Promise((resolve) => setTimeout(resolve, 200)); // the CRD is being established
  }
}
