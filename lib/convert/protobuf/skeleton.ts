// The fields a kind's JSON rule maps, read at their field numbers into a JSON skeleton and written back once the rule
// has mapped it: how both directions follow a JSON rule in protobuf. Never writes a field outside its schema: a rule's
// output the schema cannot write is refused (415) rather than sent without what the rule meant.
import { isDeepStrictEqual } from 'node:util';
import type { StatusError } from '../../errors/status-error.ts';
import { isObject } from '../rules/json.ts';
import type { Json } from '../rules/rule.ts';
import { lengthDelimited, MessageEdit, stringEntry, writeRepeatedStrings, type Field } from './message-edit.ts';
import { malformed, unsupported } from './wire.ts';

// ---- every other field a JSON rule maps: read at its field numbers into a JSON skeleton, mapped by the rule, written back ----

/**
 * One field a JSON rule reads or writes: a string, repeated strings, a map<string, string>, one message or repeated
 * ones; or bytes a rule only reads (base64 in the skeleton, as in JSON); or a map<string, message> whose keys a rule
 * maps and whose values it only carries (`keyed`: each value's bytes, base64, in the skeleton).
 */
export type WireField =
  | { readonly number: number; readonly type: 'string' | 'strings' | 'map' | 'keyed' | 'bytes' }
  | { readonly number: number; readonly type: 'message' | 'messages'; readonly schema: WireSchema; readonly inline?: true };
/** A message's fields that a JSON rule reads or writes, by JSON name; an inline message's fields sit in its parent's JSON (`json:",inline"`). */
export type WireSchema = { readonly [jsonName: string]: WireField };

export const wireString = (number: number): WireField => ({ number, type: 'string' });
export const wireStrings = (number: number): WireField => ({ number, type: 'strings' });
export const wireBytes = (number: number): WireField => ({ number, type: 'bytes' });
export const wireMap = (number: number): WireField => ({ number, type: 'map' });
export const wireKeyed = (number: number): WireField => ({ number, type: 'keyed' });
export const wireMessage = (number: number, schema: WireSchema): WireField => ({ number, type: 'message', schema });
export const wireMessages = (number: number, schema: WireSchema): WireField => ({ number, type: 'messages', schema });
export const wireInline = (number: number, schema: WireSchema): WireField => ({ number, type: 'message', schema, inline: true });

const jsonNamesBySchema = new WeakMap<WireSchema, readonly string[]>();
const fieldsBySchema = new WeakMap<WireSchema, readonly (readonly [string, WireField])[]>();

/** A schema's fields as a list, made once per schema rather than on every message of every body. */
function fieldsOf(schema: WireSchema): readonly (readonly [string, WireField])[] {
  let fields = fieldsBySchema.get(schema);
  if (fields === undefined) {
    fields = Object.entries(schema);
    fieldsBySchema.set(schema, fields);
  }
  return fields;
}

/** The JSON names a schema reads, an inline message's included (computed once per schema: every body asks). */
function jsonNamesOf(schema: WireSchema): readonly string[] {
  let names = jsonNamesBySchema.get(schema);
  if (names === undefined) {
    names = fieldsOf(schema).flatMap(([name, field]) => (field.type === 'message' && field.inline === true ? jsonNamesOf(field.schema) : [name]));
    jsonNamesBySchema.set(schema, names);
  }
  return names;
}

const stringValue = (entry: MessageEdit): string => entry.stringOf(2, 'value');
/** A message value's bytes, base64 (an absent value is an empty message, as in Go's generated Unmarshal). */
function messageValue(entry: MessageEdit): string {
  const found = entry.single(2, 'value');
  return found === undefined ? '' : entry.payload(found).toString('base64');
}

function readStringMap(edit: MessageEdit, fields: readonly Field[], name: string, valueOf = stringValue): Json {
  const map: Json = {};
  for (const field of fields) {
    const entry = new MessageEdit(edit.payload(field), `${edit.what}.${name}`);
    const key = entry.stringOf(1, 'key');
    // No label key or resource name starts with '_'; this one would set the object's prototype instead of an entry.
    if (key === '__proto__') throw malformed(entry.what, 'a map key is "__proto__"');
    // A later entry wins, as in Go's generated Unmarshal.
    map[key] = valueOf(entry);
  }
  return map;
}

const keyedEntry = (key: string, value: string): Buffer =>
  Buffer.concat([lengthDelimited(1, Buffer.from(key)), lengthDelimited(2, Buffer.from(value, 'base64'))]);

/** The fields of `schema` found in a message, as JSON (absent fields stay absent). */
export function readSkeleton(bytes: Buffer, schema: WireSchema, what: string, into: Json = {}): Json {
  const edit = new MessageEdit(bytes, what);
  for (const [name, field] of fieldsOf(schema)) {
    if (field.type === 'string') {
      const found = edit.single(field.number, name);
      if (found !== undefined) into[name] = edit.string(found, name);
    } else if (field.type === 'bytes') {
      const found = edit.single(field.number, name);
      if (found !== undefined) into[name] = edit.payload(found).toString('base64');
    } else if (field.type === 'message') {
      const found = edit.single(field.number, name);
      if (found === undefined) continue;
      if (field.inline === true) readSkeleton(edit.payload(found), field.schema, what, into);
      else into[name] = readSkeleton(edit.payload(found), field.schema, `${what}.${name}`);
    } else {
      const found = edit.all(field.number, name);
      if (found.length === 0) continue;
      if (field.type === 'strings') into[name] = found.map((item) => edit.string(item, name));
      else if (field.type === 'map') into[name] = readStringMap(edit, found, name);
      else if (field.type === 'keyed') into[name] = readStringMap(edit, found, name, messageValue);
      else if (field.type === 'messages') {
        const { schema: itemSchema } = field;
        into[name] = found.map((item) => readSkeleton(edit.payload(item), itemSchema, `${what}.${name}`));
      }
    }
  }
  return into;
}

/** A rule's output the schema cannot write: refused rather than sent without what the rule meant. */
function unwritable(what: string): StatusError {
  return unsupported(`${what} as its conversion rule writes it`);
}

function checkJsonNames(json: Json, schema: WireSchema, what: string): void {
  const names = jsonNamesOf(schema);
  for (const key in json) if (!names.includes(key)) throw unwritable(`${what}.${key}`);
}

const hasAnyOf = (json: Json, schema: WireSchema) => jsonNamesOf(schema).some((name) => json[name] !== undefined);

/** A message made from a skeleton alone (a selector the rule created), fields in number order. */
function encodeSkeleton(schema: WireSchema, json: Json, what: string, inline = false): Buffer {
  if (!inline) checkJsonNames(json, schema, what);
  const parts: { number: number; bytes: Buffer }[] = [];
  const push = (number: number, payload: Buffer) => parts.push({ number, bytes: lengthDelimited(number, payload) });
  for (const [name, field] of fieldsOf(schema)) {
    const value = field.type === 'message' && field.inline === true ? json : json[name];
    if (value === undefined) continue;
    if (field.type === 'string' && typeof value === 'string') push(field.number, Buffer.from(value));
    else if (field.type === 'bytes' && typeof value === 'string') push(field.number, Buffer.from(value, 'base64'));
    else if (field.type === 'strings' && Array.isArray(value) && value.every((item) => typeof item === 'string'))
      for (const item of value) push(field.number, Buffer.from(item));
    else if (field.type === 'map' && isObject(value) && Object.values(value).every((item) => typeof item === 'string')) {
      for (const [key, item] of Object.entries(value)) push(field.number, stringEntry(key, item as string));
    } else if (field.type === 'keyed' && isObject(value) && Object.values(value).every((item) => typeof item === 'string')) {
      for (const [key, item] of Object.entries(value)) push(field.number, keyedEntry(key, item as string));
    } else if (field.type === 'message' && field.inline === true) {
      if (hasAnyOf(json, field.schema)) push(field.number, encodeSkeleton(field.schema, json, what, true));
    } else if (field.type === 'message' && isObject(value)) push(field.number, encodeSkeleton(field.schema, value, `${what}.${name}`));
    else if (field.type === 'messages' && Array.isArray(value) && value.every(isObject))
      for (const item of value) push(field.number, encodeSkeleton(field.schema, item, `${what}.${name}`));
    else throw unwritable(`${what}.${name}`);
  }
  return Buffer.concat(parts.sort((a, b) => a.number - b.number).map((part) => part.bytes));
}

/**
 * Writes back what a rule changed in a skeleton read by readSkeleton from the same bytes: changed strings replaced in
 * place, created messages added, removed fields dropped; every field outside the schema copied byte for byte.
 */
export function writeSkeleton(bytes: Buffer, schema: WireSchema, json: Json, what: string, inline = false): Buffer {
  if (!inline) checkJsonNames(json, schema, what);
  const edit = new MessageEdit(bytes, what);
  for (const [name, field] of fieldsOf(schema)) {
    if (field.type === 'message') {
      const found = edit.single(field.number, name);
      const value = field.inline === true ? (hasAnyOf(json, field.schema) ? json : undefined) : json[name];
      const path = field.inline === true ? what : `${what}.${name}`;
      if (value === undefined) {
        if (found !== undefined && field.inline !== true) edit.remove(found);
      } else if (!isObject(value)) throw unwritable(path);
      else if (found === undefined) edit.add(field.number, encodeSkeleton(field.schema, value, path, field.inline));
      else edit.rewrite(found, (payload) => writeSkeleton(payload, field.schema, value, path, field.inline));
      continue;
    }
    const value = json[name];
    if (field.type === 'string') {
      const found = edit.single(field.number, name);
      if (value === undefined) {
        if (found !== undefined) edit.remove(found);
      } else if (typeof value !== 'string') throw unwritable(`${what}.${name}`);
      else if (found === undefined) edit.add(field.number, Buffer.from(value));
      else if (edit.string(found, name) !== value) edit.replaceString(found, value);
      continue;
    }
    if (field.type === 'bytes') {
      // Read-only: a rule that changed them cannot be followed.
      const found = edit.single(field.number, name);
      if (value !== (found === undefined ? undefined : edit.payload(found).toString('base64'))) throw unwritable(`${what}.${name}`);
      continue;
    }
    const found = edit.all(field.number, name);
    if (field.type === 'strings') {
      const values = value === undefined ? [] : value;
      if (!Array.isArray(values) || !values.every((item) => typeof item === 'string')) throw unwritable(`${what}.${name}`);
      writeRepeatedStrings(edit, field.number, found, values);
    } else if (field.type === 'map' || field.type === 'keyed') {
      const map = value === undefined ? {} : value;
      if (!isObject(map) || !Object.values(map).every((item) => typeof item === 'string')) throw unwritable(`${what}.${name}`);
      const [valueOf, entryOf] = field.type === 'map' ? [stringValue, stringEntry] : [messageValue, keyedEntry];
      if (!isDeepStrictEqual(readStringMap(edit, found, name, valueOf), map)) {
        edit.replaceAll(
          found,
          field.number,
          Object.entries(map).map(([key, item]) => entryOf(key, item as string)),
        );
      }
    } else if (field.type === 'messages') {
      const items = value === undefined ? [] : value;
      const { schema: itemSchema } = field;
      // toUpstream rules map elements, never add or drop them.
      if (!Array.isArray(items) || items.length !== found.length || !items.every(isObject)) throw unwritable(`${what}.${name}`);
      found.forEach((item, i) => edit.rewrite(item, (payload) => writeSkeleton(payload, itemSchema, items[i] as Json, `${what}.${name}`)));
    }
  }
  return edit.finish();
}
