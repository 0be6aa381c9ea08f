// Rewrites a tenant's CEL expression so the upstream apiserver, which sees prefixed namespaces, evaluates the common
// namespace references as the tenant's names, and reverses it exactly. Never rewrites inside string literals or comments.
//
// Each whole member path below (token boundaries on both sides, outside string literals and `//` comments, not the
// argument of `has(...)`, which takes a field selection only) becomes `P.substring(P.size() < 7 ? 0 : 7)`: the name
// without the `<id>-` prefix, and "" kept "" (request.namespace of a cluster-scoped object). The reverse turns exactly
// that form back into `P`, so whatever a tenant writes reads back byte for byte, even text already in that form.
// Limits: only these exact spellings (no spaces inside the path, no `object["metadata"]`, no `.?` optional selection,
// no variables holding `object.metadata`); other references to names — request.name or object.metadata.name of
// cluster-scoped objects, namespaceObject's labels' values, userInfo — are not rewritten.
import { PREFIX_LENGTH } from '../prefix.ts';

const NAMESPACE_PATHS = ['namespaceObject.metadata.name', 'object.metadata.namespace', 'oldObject.metadata.namespace', 'request.namespace'] as const;

const unprefixed = (path: string) => `${path}.substring(${path}.size() < ${PREFIX_LENGTH} ? 0 : ${PREFIX_LENGTH})`;

const isIdentifierChar = (c: string | undefined) => c !== undefined && /[A-Za-z0-9_]/.test(c);

/** Where the string literal starting with the quote at `quote` ends (exclusive); `raw` if an r/R prefix precedes it. */
function literalEnd(text: string, quote: number, raw: boolean): number {
  const q = text[quote] as string;
  const triple = text.startsWith(q.repeat(3), quote);
  const close = triple ? q.repeat(3) : q;
  let i = quote + close.length;
  while (i < text.length) {
    if (!raw && text[i] === '\\') {
      i += 2;
      continue;
    }
    if (text.startsWith(close, i)) return i + close.length;
    if (!triple && text[i] === '\n') return i; // a single-quoted literal cannot span lines: CEL rejects it, we stop at it
    i++;
  }
  return text.length;
}

/** True if the string prefix letters before a quote (r, b, rb, br in any case) mark a raw literal. */
function rawPrefix(text: string, quote: number): boolean {
  let start = quote;
  while (start > 0 && /[rRbB]/.test(text[start - 1] as string) && quote - start < 2) start--;
  if (isIdentifierChar(text[start - 1])) return false;
  return /[rR]/.test(text.slice(start, quote));
}

/** True if the path at `at` is the argument of the has() macro: `has(` (spaces allowed) right before it. */
function insideHas(text: string, at: number): boolean {
  let i = at - 1;
  while (i >= 0 && /\s/.test(text[i] as string)) i--;
  if (text[i] !== '(') return false;
  i--;
  while (i >= 0 && /\s/.test(text[i] as string)) i--;
  return i >= 2 && text.slice(i - 2, i + 1) === 'has' && !isIdentifierChar(text[i - 3]) && text[i - 3] !== '.';
}

/** The namespace path starting at `at` as a whole member path, or undefined. */
function pathAt(text: string, at: number): string | undefined {
  const before = text[at - 1];
  if (isIdentifierChar(before) || before === '.') return undefined;
  for (const path of NAMESPACE_PATHS) {
    if (text.startsWith(path, at) && !isIdentifierChar(text[at + path.length])) return path;
  }
  return undefined;
}

/**
 * Walks `text` outside literals and comments; at each whole namespace path not inside has(), `replace` returns the
 * replacement and how many characters it consumed (or undefined to copy the path unchanged).
 */
function rewritePaths(text: string, replace: (path: string, at: number) => { output: string; consumed: number } | undefined): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === '"' || c === "'") {
      const end = literalEnd(text, i, rawPrefix(text, i));
      out += text.slice(i, end);
      i = end;
      continue;
    }
    if (c === '/' && text[i + 1] === '/') {
      const newline = text.indexOf('\n', i);
      const end = newline === -1 ? text.length : newline;
      out += text.slice(i, end);
      i = end;
      continue;
    }
    const path = pathAt(text, i);
    if (path !== undefined) {
      const replaced = insideHas(text, i) ? undefined : replace(path, i);
      const output = replaced?.output ?? path;
      out += output;
      i += replaced?.consumed ?? path.length;
      continue;
    }
    out += c;
    i++;
  }
  return out;
}

/** The tenant's expression as the upstream evaluates it: namespace paths read the tenant's names. */
export function celNamespacesToUpstream(expression: string): string {
  return rewritePaths(expression, (path) => ({ output: unprefixed(path), consumed: path.length }));
}

/** The exact reverse of celNamespacesToUpstream; text not in its form is left as it is. */
export function celNamespacesToTenant(expression: string): string {
  return rewritePaths(expression, (path, at) => {
    const form = unprefixed(path);
    return expression.startsWith(form, at) ? { output: path, consumed: form.length } : undefined;
  });
}

/**
 * `text` (an upstream message quoting a policy's expression: "failed expression: ...") with every rewritten form read
 * as the tenant wrote it. Plain text, not CEL: a quote in the message must not hide an expression after it.
 */
export function celNamespacesInTextToTenant(text: string): string {
  if (!text.includes('.substring(')) return text;
  for (const path of NAMESPACE_PATHS) text = text.replaceAll(unprefixed(path), path);
  return text;
}
