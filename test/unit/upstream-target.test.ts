// What a tenant's list or watch asks of the upstream: parameters that would be judged over upstream names never go.
import t from 'tap';
import { kindOf } from '../../lib/convert/kinds.ts';
import { parseRequestInfo } from '../../lib/convert/request-info.ts';
import { upstreamResourceTarget } from '../../lib/convert/request.ts';

const target = (method: string, path: string, query: string) => {
  const q = new URLSearchParams(query);
  const info = parseRequestInfo(method, path, q);
  return decodeURIComponent(upstreamResourceTarget(info, kindOf(info.apiGroup, info.resource)!, q, 'abc123'));
};

t.test("the alpha shardSelector is answered as with the feature off: the upstream never shards the tenant's names", async (t) => {
  for (const [path, query] of [
    ['/api/v1/namespaces/default/pods', 'shardSelector=shardRange(object.metadata.uid,0x0,0x8)&limit=5'],
    ['/api/v1/pods', 'watch=true&shardSelector=x'],
    ['/apis/rbac.authorization.k8s.io/v1/clusterroles', 'shardSelector=x'],
    ['/api/v1/namespaces/default/configmaps/settings', 'shardSelector=x'],
  ] as const) {
    const upstream = target('GET', path, query);
    t.notMatch(upstream, /shardSelector/, `${path}?${query}`);
  }
  t.match(target('GET', '/api/v1/namespaces/default/pods', 'shardSelector=x&limit=5'), /\/namespaces\/abc123-default\/pods\?limit=5$/, 'the rest as ever');
});
