// Duplicate members of a client's JSON or YAML body, and the body written for the upstream with them repeated, so
// the apiserver itself reports them (fieldValidation=Strict: its error; Warn: its Warning headers) in its own words.
// Never repeats a value the rules did not produce: each repetition carries the converted, winning (last) value.

/** One later occurrence of a member: in the object at `path` (keys and array indices), `key` again. */
export interface DuplicateField {
  path: readonly (string | number)[];
  key: string;
  /** Its line in a YAML body (the apiserver's YAML errors name it); undefined in JSON. */
  line?: number | undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

/**
 * Members (name-value pairs) written in a valid JSON text: outside strings a colon only ever separates a name from
 * its value. Compared with the members of the parsed value, a difference means duplicates, without a second parse.
 */
export function membersWritten(text: string): number {
  let members = 0;
  const end = text.length;
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === COLON) members++;
    else if (c === QUOTE) i = closingQuote(text, i);
  }
  return members;
}

/** The index of the quote closing the string opened at `open` (indexOf: a native search, no per-character loop). */
function closingQuote(text: string, open: number): number {
  let close = text.indexOf('"', open + 1);
  for (;;) {
    if (close === -1) return text.length;
    // Escaped when an odd number of backslashes precede it.
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === BACKSLASH) backslashes++;
    if ((backslashes & 1) === 0) return close;
    close = text.indexOf('"', close + 1);
  }
}

interface Frame {
  keys: Set<string> | null; // null: an array
  key: string;
  index: number;
}

/** Where each duplicate member of a valid JSON text sits, in document order (only called when there are some). */
export function jsonDuplicates(text: string): DuplicateField[] {
  const found: DuplicateField[] = [];
  const stack: Frame[] = [];
  let expectingKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      const start = i;
      i = closingQuote(text, i);
      if (!expectingKey) continue;
      const raw = text.slice(start, i + 1);
      const key = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
      const frame = stack[stack.length - 1]!;
      if (frame.keys!.has(key)) found.push({ path: pathOf(stack), key });
      else frame.keys!.add(key);
      frame.key = key;
      expectingKey = false;
    } else if (c === '{') {
      stack.push({ keys: new Set(), key: '', index: 0 });
      expectingKey = true;
    } else if (c === '[') {
      stack.push({ keys: null, key: '', index: 0 });
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ',') {
      const frame = stack[stack.length - 1]!;
      if (frame.keys === null) frame.index++;
      else expectingKey = true;
    }
  }
  return found;
}

function pathOf(stack: readonly Frame[]): (string | number)[] {
  const path: (string | number)[] = [];
  for (let i = 0; i < stack.length - 1; i++) path.push(stack[i]!.keys === null ? stack[i]!.index : stack[i]!.key);
  return path;
}

/** The line (1-based) of a character offset. */
export function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

interface DuplicateTree {
  children: Map<string | number, DuplicateTree>;
  /** Per key of this object: the lines of its later occurrences. */
  repeats: Map<string, (number | undefined)[]>;
}

function treeOf(duplicates: readonly DuplicateField[]): DuplicateTree {
  const root: DuplicateTree = { children: new Map(), repeats: new Map() };
  for (const { path, key, line } of duplicates) {
    let node = root;
    for (const step of path) {
      let child = node.children.get(step);
      if (child === undefined) node.children.set(step, (child = { children: new Map(), repeats: new Map() }));
      node = child;
    }
    const lines = node.repeats.get(key);
    if (lines === undefined) node.repeats.set(key, [line]);
    else lines.push(line);
  }
  return root;
}

/**
 * `value` as JSON, each duplicate member repeated after its first occurrence with the value it has now. A repetition
 * with a line starts on that line (JSON may break lines between tokens), so the apiserver's YAML errors name the
 * line the client wrote. Duplicates whose object the rules removed are dropped. JSON.stringify when there are none.
 */
export function stringifyWithDuplicates(value: unknown, duplicates: readonly DuplicateField[]): string {
  if (duplicates.length === 0) return JSON.stringify(value);
  const out = { text: '', line: 1 };
  write(value, treeOf(duplicates), out);
  return out.text;
}

function write(value: unknown, node: DuplicateTree | undefined, out: { text: string; line: number }): void {
  if (node === undefined || typeof value !== 'object' || value === null) {
    out.text += JSON.stringify(value) ?? 'null';
    return;
  }
  if (Array.isArray(value)) {
    out.text += '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.text += ',';
      write(value[i], node.children.get(i), out);
    }
    out.text += ']';
    return;
  }
  out.text += '{';
  let first = true;
  for (const key of Object.keys(value)) {
    const member = (value as Record<string, unknown>)[key];
    if (member === undefined || typeof member === 'function') continue; // as JSON.stringify
    const name = JSON.stringify(key);
    if (!first) out.text += ',';
    first = false;
    const lines = node.repeats.get(key);
    if (lines === undefined) {
      out.text += name + ':';
      write(member, node.children.get(key), out);
      continue;
    }
    // The first occurrences plain, the last (the one whose duplicates inside were found last) with them.
    const plain = JSON.stringify(member);
    out.text += name + ':' + plain;
    lines.forEach((line, i) => {
      out.text += ',';
      for (; line !== undefined && out.line < line; out.line++) out.text += '\n';
      out.text += name + ':';
      if (i === lines.length - 1) write(member, node.children.get(key), out);
      else out.text += plain;
    });
  }
  out.text += '}';
}
