// JSON answers written as YAML for a client that asked for YAML (the apiserver answers `Accept: application/yaml` in
// YAML), streamed: a list's items are written as they arrive, never held whole. Block style as sigs.k8s.io/yaml
// writes it (two-space indent, a sequence under a key not indented, `{}` and `[]` for empty ones), keys in the order
// they came. A string is plain only where YAML 1.1 reads it back as that same string (no number, boolean, null or
// timestamp look-alike); any other is double-quoted, which JSON's own escapes are valid for.
import { jsonParser } from 'stream-json/core/parser.js';
import { none } from 'stream-chain/core';
import type { Token } from 'stream-json/core/parser.js';

const PLAIN = /^[A-Za-z_][A-Za-z0-9_./-]*$/;
/** Words YAML 1.1 (go-yaml v2, sigs.k8s.io/yaml) reads as booleans or null. */
const RESOLVED_WORDS = /^(?:y|n|yes|no|on|off|true|false|null)$/i;

/** Characters JSON leaves as they are that YAML 1.1 takes for line breaks, even inside quotes. */
const YAML_BREAKS = /[\u0085\u2028\u2029]/g;

function scalarText(value: string): string {
  if (PLAIN.test(value) && !RESOLVED_WORDS.test(value)) return value;
  return JSON.stringify(value).replace(YAML_BREAKS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

interface Frame {
  kind: 'map' | 'seq';
  /** Spaces before each line of its entries. */
  indent: number;
  /** Its first line continues the parent's `- ` (a map or sequence that is an item of a sequence). */
  inlineFirst: boolean;
  /** The map's key whose value comes next. */
  key: string;
}

/** A container begun but not yet known to be empty: what to write either way. */
interface Pending {
  kind: 'map' | 'seq';
  /** Written when it is empty (`key: {}`). */
  empty: string;
  /** Written before its first entry (`key:` and a line break, or `- `). */
  opening: string;
  frame: Frame;
}

/** Turns one JSON value's tokens into YAML text, token by token. */
export class YamlWriter {
  readonly #stack: Frame[] = [];
  #pending: Pending | null = null;
  #out = '';

  /** The YAML for `tokens` (what can be written so far). */
  write(tokens: readonly Token[]): string {
    for (const token of tokens) this.#token(token);
    const out = this.#out;
    this.#out = '';
    return out;
  }

  /** Where the next line of the innermost container starts: its indent, or nothing right after its parent's `- `. */
  #lead(): string {
    const frame = this.#stack.at(-1);
    if (frame === undefined) return '';
    if (frame.inlineFirst) {
      frame.inlineFirst = false;
      return '';
    }
    return ' '.repeat(frame.indent);
  }

  /** A scalar or container value at the current place: after a key, as an item, or the whole document. */
  #value(scalar: string | null, container: 'map' | 'seq' | null): void {
    const parent = this.#stack.at(-1);
    const lead = this.#lead();
    const empty = container === 'map' ? '{}' : '[]';
    if (parent === undefined) {
      if (container === null) this.#out += `${scalar}\n`;
      else this.#pending = { kind: container, empty: `${empty}\n`, opening: '', frame: { kind: container, indent: 0, inlineFirst: false, key: '' } };
      return;
    }
    if (parent.kind === 'map') {
      const key = `${lead}${scalarText(parent.key)}:`;
      if (container === null) this.#out += `${key} ${scalar}\n`;
      else {
        // A sequence under a key is not indented; a map is, by two.
        const indent = container === 'map' ? parent.indent + 2 : parent.indent;
        this.#pending = { kind: container, empty: `${key} ${empty}\n`, opening: `${key}\n`, frame: { kind: container, indent, inlineFirst: false, key: '' } };
      }
      return;
    }
    if (container === null) this.#out += `${lead}- ${scalar}\n`;
    else
      this.#pending = {
        kind: container,
        empty: `${lead}- ${empty}\n`,
        opening: `${lead}- `,
        frame: { kind: container, indent: parent.indent + 2, inlineFirst: true, key: '' },
      };
  }

  #token(token: Token): void {
    const pending = this.#pending;
    if (pending !== null) {
      this.#pending = null;
      if ((token.name === 'endObject' && pending.kind === 'map') || (token.name === 'endArray' && pending.kind === 'seq')) {
        this.#out += pending.empty;
        return;
      }
      this.#out += pending.opening;
      this.#stack.push(pending.frame);
    }
    switch (token.name) {
      case 'startObject':
        return this.#value(null, 'map');
      case 'startArray':
        return this.#value(null, 'seq');
      case 'endObject':
      case 'endArray':
        this.#stack.pop();
        return;
      case 'keyValue':
        this.#stack.at(-1)!.key = token.value;
        return;
      case 'stringValue':
        return this.#value(scalarText(token.value), null);
      case 'numberValue':
        return this.#value(token.value, null);
      case 'nullValue':
        return this.#value('null', null);
      case 'trueValue':
        return this.#value('true', null);
      case 'falseValue':
        return this.#value('false', null);
      default:
        return; // (chunks and markers: not asked for)
    }
  }
}

/** JSON text, in chunks as it arrives, to YAML text; throws on text that is not JSON. */
export class JsonToYaml {
  readonly #parse = jsonParser({ packValues: true, streamValues: false });
  readonly #writer = new YamlWriter();

  /** The YAML for `text`, the next part of the JSON (which may end anywhere, mid-token too). */
  push(text: string): string {
    return this.#yaml(this.#parse(text));
  }

  /** What is left once the JSON has ended. */
  end(): string {
    return this.#yaml(this.#parse(none as unknown as string));
  }

  #yaml(result: unknown): string {
    if (result === none || result === undefined) return '';
    const tokens = (result as { values?: Token[] }).values;
    return this.#writer.write(tokens ?? [result as Token]);
  }
}

/** A whole JSON text as YAML. */
export function jsonTextToYaml(text: string): string {
  const converter = new JsonToYaml();
  return converter.push(text) + converter.end();
}
