// Classifies a request the way the kube-apiserver's RequestInfoFactory does (k8s.io/apiserver
// pkg/endpoints/request/requestinfo.go), so tenantgate and the upstream agree on what a path means.
// Pure: reads the method, path and query, never the network; rewrites nothing.
import { isGoInt64, parseFieldSelector, parseLabelSelector } from './selectors.ts';
import { badRequest, internalError } from '../errors/status-error.ts';

export interface RequestInfo {
  /** True for /api/{version}/... and /apis/{group}/{version}/... paths that name a resource. */
  isResourceRequest: boolean;
  /** The percent-decoded path (Go's URL.Path), without the query. */
  path: string;
  /**
   * The Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection, proxy, or ''
   * for an unknown method on a resource path. For non-resource requests: the lower-case HTTP method.
   */
  verb: string;
  apiPrefix: 'api' | 'apis' | '';
  apiGroup: string;
  apiVersion: string;
  /** For /api/v1/namespaces/{name}[/status|/finalize] this is {name} too, as the apiserver sets it. */
  namespace: string;
  resource: string;
  subresource: string;
  /**
   * The object name. On list and watch it may come from a `fieldSelector` of `metadata.name=X` (as the
   * apiserver does, for authorization) while the path names no object: rewrite paths from `parts`, not `name`.
   */
  name: string;
  /** The path segments from the resource on: resource/name/subresource/more... Empty for non-resource requests. */
  parts: string[];
}

// Path segments after the version that are verbs, not resources (the deprecated /watch/ and /proxy/ forms).
const VERB_SEGMENTS = new Set(['proxy', 'watch']);
// Subresources of a namespace: /api/v1/namespaces/{name}/status is not a resource called "status" in {name}.
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

const VERB_OF_METHOD: Record<string, string> = {
  POST: 'create',
  GET: 'get',
  HEAD: 'get',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
};

/**
 * The RequestInfo of one request. `path` is the raw path (no query), as sent; it is percent-decoded
 * before it is split, as Go's URL.Path is, so `%2F` separates segments exactly as it does upstream.
 * Throws a 400 StatusError for malformed percent-encoding (Go's server refuses those before any handler),
 * and a 500 InternalError for `/api/v1/watch` or `/api/v1/proxy` with nothing after the verb, as the apiserver does.
 */
export function parseRequestInfo(method: string, path: string, query: URLSearchParams): RequestInfo {
  const decodedPath = decodePath(path);
  const info: RequestInfo = {
    isResourceRequest: false,
    path: decodedPath,
    verb: method.toLowerCase(),
    apiPrefix: '',
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
    parts: [],
  };

  let parts = splitPath(decodedPath);
  if (parts.length < 3) return info;
  const prefix = parts[0];
  if (prefix !== 'api' && prefix !== 'apis') return info;
  info.apiPrefix = prefix;
  // /apis/{group}/{version} is discovery: a resource request needs one more segment than /api/{version}.
  // (The apiserver leaves apiPrefix "apis" set on these non-resource requests; so does this.)
  if (prefix === 'apis' && parts.length < 4) return info;

  let at = 1;
  if (prefix === 'apis') info.apiGroup = parts[at++]!;
  info.isResourceRequest = true;
  info.apiVersion = parts[at++]!;
  parts = parts.slice(at);

  if (VERB_SEGMENTS.has(parts[0]!)) {
    if (parts.length < 2) {
      throw internalError(`Internal error occurred: failed to create RequestInfo: unable to determine kind and namespace from url, ${path}`);
    }
    info.verb = parts[0]!;
    parts = parts.slice(1);
  } else {
    // Methods are case-sensitive (RFC 9110), as in the apiserver's switch: `get` is no GET.
    info.verb = Object.hasOwn(VERB_OF_METHOD, method) ? VERB_OF_METHOD[method]! : '';
  }

  // /namespaces/{namespace}/{resource}/...: parts become relative to the resource.
  if (parts[0] === 'namespaces' && parts.length > 1) {
    info.namespace = parts[1]!;
    if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2]!)) parts = parts.slice(2);
  }
  info.parts = parts;

  if (parts.length >= 3 && info.verb !== 'proxy') info.subresource = parts[2]!;
  if (parts.length >= 2) info.name = parts[1]!;
  info.resource = parts[0] ?? '';

  if (info.name === '' && info.verb === 'get') {
    const options = decodeListOptions(query);
    info.verb = options.watch ? 'watch' : 'list';
    if (options.nameFromFieldSelector !== null && isPathSegmentName(options.nameFromFieldSelector)) {
      info.name = options.nameFromFieldSelector;
    }
  }
  if (info.name === '' && info.verb === 'delete') info.verb = 'deletecollection';
  return info;
}

function decodePath(path: string): string {
  if (path.indexOf('%') === -1) return path;
  try {
    return decodeURIComponent(path);
  } catch {
    throw badRequest('the request path has a malformed percent-encoding');
  }
}

/** Go's strings.Trim(path, "/") then Split on "/": empty inner segments stay. */
function splitPath(path: string): string[] {
  let start = 0;
  let end = path.length;
  while (start < end && path.charCodeAt(start) === 47) start++;
  while (end > start && path.charCodeAt(end - 1) === 47) end--;
  return start === end ? [] : path.slice(start, end).split('/');
}

/** Whether the query's `watch` makes a collection GET a watch (Convert_Slice_string_To_bool: only "0" and "false", any case, are false; "" is true). */
export function asksToWatch(query: URLSearchParams): boolean {
  const watchValue = query.get('watch');
  return watchValue !== null && watchValue !== '0' && watchValue.toLowerCase() !== 'false';
}

interface ListOptionsSummary {
  watch: boolean;
  /** The value a `metadata.name=` term of the field selector requires, or null. */
  nameFromFieldSelector: string | null;
}

/**
 * What the apiserver learns from decoding metav1.ListOptions on a collection GET. When any parameter fails
 * to decode (an unparsable selector, a non-integer limit), the apiserver keeps only `watch` and no name.
 */
function decodeListOptions(query: URLSearchParams): ListOptionsSummary {
  const watch = asksToWatch(query);
  const failed = { watch, nameFromFieldSelector: null };

  for (const key of ['limit', 'timeoutSeconds']) {
    const value = query.get(key);
    if (value !== null && !isGoInt64(value)) return failed;
  }
  const labelSelector = query.get('labelSelector');
  if (labelSelector !== null && !isValidLabelSelector(labelSelector)) return failed;
  const fieldSelector = query.get('fieldSelector');
  if (fieldSelector === null) return { watch, nameFromFieldSelector: null };
  let terms;
  try {
    terms = parseFieldSelector(fieldSelector);
  } catch {
    return failed;
  }
  // fields.ParseSelector sorts the terms; RequiresExactMatch takes the first `=` or `==` term on the field.
  let name: string | null = null;
  let nameTerm = '';
  for (const term of terms) {
    if (term.field !== 'metadata.name' || term.operator === '!=') continue;
    if (name === null || term.raw < nameTerm) {
      name = term.value;
      nameTerm = term.raw;
    }
  }
  return { watch, nameFromFieldSelector: name };
}

function isValidLabelSelector(selector: string): boolean {
  try {
    parseLabelSelector(selector);
    return true;
  } catch {
    return false;
  }
}

/** content.IsPathSegmentName: not "." or "..", no "/" or "%". */
function isPathSegmentName(name: string): boolean {
  return name !== '.' && name !== '..' && name.indexOf('/') === -1 && name.indexOf('%') === -1;
}
