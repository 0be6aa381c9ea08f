// A JSON value written as YAML exactly as go-yaml v3 (go.yaml.in/yaml/v3 v3.0.4) writes the node it parsed the
// same JSON into, styles cleared: what gnostic keeps as the text of an OpenAPI v2 `Any` (vendor extensions,
// defaults, enums, examples). kubectl reads those texts back with a YAML parser, so any valid YAML would do for it,
// but the protobuf document is meant to be the one kube-openapi would serve for the same JSON, byte for byte.
// A port of the parts of go-yaml's emitter such a node reaches: block mappings and sequences, `{}` and `[]` for
// empty ones, scalars plain, single-quoted, double-quoted or literal, indent 4, no line width, no comments.

const INDENT = 4;

/** Where a node sits: the state go-yaml's emitter had pushed when it emitted the node (it decides indentation). */
type Parent = 'document' | 'sequence-item' | 'mapping-key' | 'mapping-value';

interface ScalarAnalysis {
  multiline: boolean;
  blockPlainAllowed: boolean;
  singleQuotedAllowed: boolean;
  blockAllowed: boolean;
}

const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;

function isBreak(c: number): boolean {
  return c === LF || c === 0x0d || c === 0x85 || c === 0x2028 || c === 0x2029;
}

function isBlankOrBreakOrNul(c: number): boolean {
  return c === SPACE || c === TAB || c === 0 || isBreak(c);
}

/** go-yaml's is_printable, on code points. */
function isPrintable(c: number): boolean {
  return c === LF || (c >= 0x20 && c <= 0x7e) || (c >= 0xa0 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd && c !== 0xfeff);
}

/** The code point at `i` of a well-formed string. */
function codePointAt(text: string, i: number): number {
  return text.codePointAt(i)!;
}

function codeUnits(c: number): number {
  return c > 0xffff ? 2 : 1;
}

/** go-yaml's yaml_emitter_analyze_scalar: which styles can carry the text unchanged. */
function analyzeScalar(value: string): ScalarAnalysis {
  if (value.length === 0) return { multiline: false, blockPlainAllowed: true, singleQuotedAllowed: true, blockAllowed: false };
  let blockIndicators = value.startsWith('---') || value.startsWith('...');
  let lineBreaks = false;
  let special = false;
  let tabs = false;
  let leadingSpace = false;
  let leadingBreak = false;
  let trailingSpace = false;
  let trailingBreak = false;
  let breakSpace = false;
  let spaceBreak = false;
  let precededByWhitespace = true;
  let previousSpace = false;
  let previousBreak = false;
  for (let i = 0; i < value.length;) {
    const c = codePointAt(value, i);
    const next = i + codeUnits(c);
    const followedByWhitespace = next >= value.length || value.charCodeAt(next) === SPACE || value.charCodeAt(next) === TAB;
    if (i === 0) {
      switch (c) {
        case 0x23:
        case 0x2c:
        case 0x5b:
        case 0x5d:
        case 0x7b:
        case 0x7d:
        case 0x26:
        case 0x2a: // # , [ ] { } & *
        case 0x21:
        case 0x7c:
        case 0x3e:
        case 0x27:
        case 0x22:
        case 0x25:
        case 0x40:
        case 0x60: // ! | > ' " % @ `
          blockIndicators = true;
          break;
        case 0x3f:
        case 0x3a: // ? :
        case 0x2d: // -
          if (followedByWhitespace) blockIndicators = true;
          break;
      }
    } else if ((c === 0x3a && followedByWhitespace) || (c === 0x23 && precededByWhitespace)) {
      blockIndicators = true;
    }
    if (c === TAB) tabs = true;
    else if (!isPrintable(c)) special = true;
    if (c === SPACE) {
      if (i === 0) leadingSpace = true;
      if (next === value.length) trailingSpace = true;
      if (previousBreak) breakSpace = true;
      previousSpace = true;
      previousBreak = false;
    } else if (isBreak(c)) {
      lineBreaks = true;
      if (i === 0) leadingBreak = true;
      if (next === value.length) trailingBreak = true;
      if (previousSpace) spaceBreak = true;
      previousSpace = false;
      previousBreak = true;
    } else {
      previousSpace = false;
      previousBreak = false;
    }
    precededByWhitespace = isBlankOrBreakOrNul(c);
    i = next;
  }
  // (Flow contexts never hold a scalar here: only empty collections are written in flow style.)
  let blockPlainAllowed = true;
  let singleQuotedAllowed = true;
  let blockAllowed = true;
  if (leadingSpace || leadingBreak || trailingSpace || trailingBreak) blockPlainAllowed = false;
  if (trailingSpace) blockAllowed = false;
  if (breakSpace || spaceBreak || tabs || special) {
    blockPlainAllowed = false;
    singleQuotedAllowed = false;
  }
  if (spaceBreak || special) blockAllowed = false;
  if (lineBreaks || blockIndicators) blockPlainAllowed = false;
  return { multiline: lineBreaks, blockPlainAllowed, singleQuotedAllowed, blockAllowed };
}

// ---- what a plain string would read back as (go-yaml's resolve): such strings are written double-quoted ----

const RESOLVED_WORDS = new Set([
  'true',
  'True',
  'TRUE',
  'false',
  'False',
  'FALSE',
  '',
  '~',
  'null',
  'Null',
  'NULL',
  '.nan',
  '.NaN',
  '.NAN',
  '.inf',
  '.Inf',
  '.INF',
  '+.inf',
  '+.Inf',
  '+.INF',
  '-.inf',
  '-.Inf',
  '-.INF',
]);
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;
/** strconv.ParseInt/ParseUint with base 0 (underscores already removed), as [sign, digits, radix]. */
const GO_INTEGER = /^([+-]?)(?:0[xX]([0-9a-fA-F]+)|0[bB]([01]+)|0[oO]([0-7]+)|(0[0-7]*)|([1-9][0-9]*))$/;
const YAML_STYLE_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;
/** strconv.ParseFloat's syntax for text starting with a dot (it lets single underscores separate digits). */
const GO_FLOAT_FROM_DOT = /^\.\d+(?:_\d+)*(?:[eE][+-]?\d+(?:_\d+)*)?$/;
/** Binary and octal with a sign after the prefix: go-yaml parses those once more, without the prefix, after ParseInt failed. */
const SIGN_AFTER_PREFIX = /^0([bo])([+-])([0-7]+)$/;

function parsesAsGoInteger(text: string): boolean {
  const match = GO_INTEGER.exec(text);
  if (match === null) return false;
  const [, sign, hex, binary, octal, legacyOctal, decimal] = match;
  const magnitude =
    hex !== undefined
      ? BigInt('0x' + hex)
      : binary !== undefined
        ? BigInt('0b' + binary)
        : octal !== undefined
          ? BigInt('0o' + octal)
          : legacyOctal !== undefined
            ? BigInt('0o' + (legacyOctal.slice(1) || '0'))
            : BigInt(decimal!);
  if (sign === '-') return -magnitude >= INT64_MIN;
  return magnitude <= (sign === '+' ? INT64_MAX : UINT64_MAX); // ParseUint takes no sign
}

function parsesWithSignAfterPrefix(text: string): boolean {
  const match = SIGN_AFTER_PREFIX.exec(text);
  if (match === null || (match[1] === 'b' && /[2-7]/.test(match[3]!))) return false;
  const magnitude = BigInt('0' + match[1] + match[3]);
  return match[2] === '-' ? -magnitude >= INT64_MIN : magnitude <= INT64_MAX;
}

/** Go's ParseFloat of syntactically valid text: an error only when it overflows (underflow gives 0). */
function isFiniteFloat(text: string): boolean {
  return Number.isFinite(Number(text.replaceAll('_', '')));
}

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const TIMESTAMP = /^(\d{4})-(\d{1,2})-(\d{1,2})(?:([Tt ])(\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?(Z|[+-]\d{2}:\d{2})?)?$/;

/** go-yaml's parseTimestamp: Go's time.Parse with its four layouts. */
function parsesAsTimestamp(text: string): boolean {
  const match = TIMESTAMP.exec(text);
  if (match === null) return false;
  const [, year, month, day, separator, hour, minute, second, zone] = match;
  const y = Number(year);
  const m = Number(month);
  const d = Number(day);
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  if (m < 1 || m > 12 || d < 1 || d > DAYS_IN_MONTH[m - 1]! || (m === 2 && d === 29 && !leap)) return false;
  if (separator === undefined) return true;
  if ((separator === ' ') !== (zone === undefined)) return false; // T and t layouts carry a zone, the space one none
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return false;
  if (zone !== undefined && zone !== 'Z' && (Number(zone.slice(1, 3)) > 24 || Number(zone.slice(4)) > 60)) return false;
  return true;
}

/** True when go-yaml would read `text`, written plain, as something other than a string (its resolve). */
function resolvesToNonString(text: string): boolean {
  if (RESOLVED_WORDS.has(text)) return true;
  const first = text.charCodeAt(0);
  if (first === 0x2e /* . */) return GO_FLOAT_FROM_DOT.test(text) && isFiniteFloat(text);
  if (!(first >= 0x30 && first <= 0x39) && first !== 0x2b && first !== 0x2d) return false; // not a digit or sign
  if (parsesAsTimestamp(text)) return true;
  const plain = text.replaceAll('_', '');
  return parsesAsGoInteger(plain) || (YAML_STYLE_FLOAT.test(plain) && isFiniteFloat(plain)) || parsesWithSignAfterPrefix(plain);
}

// ---- the emitter ----

type Style = 'plain' | 'single' | 'double' | 'literal';

function hex(value: number, digits: number): string {
  return value.toString(16).toUpperCase().padStart(digits, '0');
}

const ESCAPES: Record<number, string> = {
  0x00: '\\0',
  0x07: '\\a',
  0x08: '\\b',
  0x09: '\\t',
  0x0a: '\\n',
  0x0b: '\\v',
  0x0c: '\\f',
  0x0d: '\\r',
  0x1b: '\\e',
  0x22: '\\"',
  0x5c: '\\\\',
  0x85: '\\N',
  0xa0: '\\_',
  0x2028: '\\L',
  0x2029: '\\P',
};

class GoYamlEmitter {
  text = '';
  private column = 0;
  private indent = -1;
  private readonly indents: number[] = [];
  /** The last thing written was whitespace (or nothing): an indicator needs no space before it. */
  private whitespace = true;
  /** Only indentation has been written on this line so far. */
  private indention = true;

  /** Writes text without line breaks; every character is one column (all reach here as single code units). */
  private put(text: string): void {
    this.text += text;
    this.column += text.length;
  }

  private putBreak(): void {
    this.text += '\n';
    this.column = 0;
    this.indention = true;
  }

  /** A line break other than LF, written as it is: go-yaml counts it as a new line. */
  private putOtherBreak(char: string): void {
    this.text += char;
    this.column = 0;
    this.indention = true;
  }

  private writeIndent(): void {
    const indent = Math.max(this.indent, 0);
    if (!this.indention || this.column > indent || (this.column === indent && !this.whitespace)) this.putBreak();
    if (this.column < indent) this.put(' '.repeat(indent - this.column));
    this.whitespace = true;
  }

  private writeIndicator(indicator: string, needWhitespace: boolean, isWhitespace: boolean, isIndention: boolean): void {
    if (needWhitespace && !this.whitespace) this.put(' ');
    this.put(indicator);
    this.whitespace = isWhitespace;
    this.indention = this.indention && isIndention;
  }

  private increaseIndent(flow: boolean, parent: Parent): void {
    this.indents.push(this.indent);
    if (this.indent < 0) this.indent = flow ? INDENT : 0;
    else if (parent === 'sequence-item')
      this.indent += 2; // under "- ", the indicator's own width
    else this.indent = INDENT * Math.floor((this.indent + INDENT) / INDENT);
  }

  private decreaseIndent(): void {
    this.indent = this.indents.pop()!;
  }

  document(value: unknown): void {
    this.node(value, 'document', false);
    this.indent = -1;
    this.writeIndent(); // the document ends with a line break
  }

  private node(value: unknown, parent: Parent, simpleKey: boolean): void {
    if (Array.isArray(value)) {
      if (value.length === 0) this.emptyFlow('[', ']');
      else this.sequence(value, parent);
    } else if (typeof value === 'object' && value !== null) {
      const entries = Object.entries(value).filter(([, item]) => isJsonValue(item));
      if (entries.length === 0) this.emptyFlow('{', '}');
      else this.mapping(entries, parent);
    } else if (typeof value === 'string') {
      this.scalar(wellFormed(value), true, parent, simpleKey);
    } else {
      this.scalar(jsonScalarText(value), false, parent, simpleKey);
    }
  }

  private emptyFlow(open: string, close: string): void {
    this.writeIndicator(open, true, true, false);
    this.writeIndicator(close, false, false, false);
  }

  private sequence(items: unknown[], parent: Parent): void {
    this.increaseIndent(false, parent);
    for (const item of items) {
      this.writeIndent();
      this.writeIndicator('-', true, false, true);
      this.node(isJsonValue(item) ? item : null, 'sequence-item', false);
    }
    this.decreaseIndent();
  }

  private mapping(entries: [string, unknown][], parent: Parent): void {
    this.increaseIndent(false, parent);
    for (const [rawKey, value] of entries) {
      const key = wellFormed(rawKey);
      this.writeIndent();
      // A simple key fits on its line within 128 bytes; any other is written after "? ", its value after ": ".
      if (!analyzeScalar(key).multiline && (key.length <= 42 || Buffer.byteLength(key) <= 128)) {
        this.scalar(key, true, 'mapping-key', true);
        this.writeIndicator(':', false, false, false);
      } else {
        this.writeIndicator('?', true, false, true);
        this.scalar(key, true, 'mapping-key', false);
        this.writeIndent();
        this.writeIndicator(':', true, false, true);
      }
      this.node(value, 'mapping-value', false);
    }
    this.decreaseIndent();
  }

  /** `isString`: a JSON string (else the text of a number, boolean or null, which always goes plain). */
  private scalar(value: string, isString: boolean, parent: Parent, simpleKey: boolean): void {
    // go-yaml's encoder: multi-line text goes literal, text that would read back as another type double-quoted.
    let style: Style = 'plain';
    if (isString && value.includes('\n')) style = 'literal';
    else if (isString && resolvesToNonString(value)) style = 'double';
    // Its emitter then falls back to a style that can carry the text.
    const analysis = analyzeScalar(value);
    if (simpleKey && analysis.multiline) style = 'double';
    if (style === 'plain' && (!analysis.blockPlainAllowed || (value.length === 0 && simpleKey))) style = 'single';
    if (style === 'single' && !analysis.singleQuotedAllowed) style = 'double';
    if (style === 'literal' && (!analysis.blockAllowed || simpleKey)) style = 'double';

    this.increaseIndent(true, parent);
    if (style === 'plain') this.plain(value);
    else if (style === 'single') this.singleQuoted(value);
    else if (style === 'double') this.doubleQuoted(value);
    else this.literal(value);
    this.decreaseIndent();
  }

  private plain(value: string): void {
    if (value.length > 0 && !this.whitespace) this.put(' ');
    this.put(value); // no line breaks: plain style is refused for them
    if (value.length > 0) this.whitespace = false;
    this.indention = false;
  }

  private singleQuoted(value: string): void {
    this.writeIndicator("'", true, false, false);
    let breaks = false;
    for (let i = 0; i < value.length; i++) {
      const c = value.charCodeAt(i);
      if (isBreak(c)) {
        // Only LS and PS get here (LF goes literal or double-quoted, CR and NEL are not printable).
        this.putOtherBreak(value[i]!);
        breaks = true;
      } else {
        if (breaks) this.writeIndent();
        this.put(c === 0x27 ? "''" : value[i]!);
        this.indention = false;
        breaks = false;
      }
    }
    this.writeIndicator("'", false, false, false);
    this.whitespace = false;
    this.indention = false;
  }

  private doubleQuoted(value: string): void {
    this.writeIndicator('"', true, false, false);
    // (go-yaml checks for a byte order mark at the start of the whole text, not at each character.)
    const escapeAll = value.charCodeAt(0) === 0xfeff;
    let out = '';
    for (let i = 0; i < value.length;) {
      const c = codePointAt(value, i);
      i += codeUnits(c);
      if (escapeAll || !isPrintable(c) || isBreak(c) || c === 0x22 || c === 0x5c) {
        out += ESCAPES[c] ?? (c <= 0xff ? '\\x' + hex(c, 2) : c <= 0xffff ? '\\u' + hex(c, 4) : '\\U' + hex(c, 8));
      } else {
        out += String.fromCharCode(c); // printable code points are all in the BMP
      }
    }
    this.put(out);
    this.writeIndicator('"', false, false, false);
    this.whitespace = false;
    this.indention = false;
  }

  private literal(value: string): void {
    this.writeIndicator('|', true, false, false);
    const first = value.charCodeAt(0);
    if (first === SPACE || isBreak(first)) this.writeIndicator(String(INDENT), false, false, false);
    const last = value.charCodeAt(value.length - 1);
    let chomp = '';
    if (!isBreak(last)) chomp = '-';
    else if (value.length === 1 || isBreak(value.charCodeAt(value.length - 2))) chomp = '+';
    if (chomp !== '') this.writeIndicator(chomp, false, false, false);
    this.putBreak();
    this.whitespace = true;
    let breaks = true;
    for (let i = 0; i < value.length; i++) {
      const c = value.charCodeAt(i);
      if (c === LF) {
        this.putBreak();
        breaks = true;
      } else if (isBreak(c)) {
        this.putOtherBreak(value[i]!);
        breaks = true;
      } else {
        if (breaks) this.writeIndent();
        this.put(value[i]!);
        this.indention = false;
        breaks = false;
      }
    }
  }
}

const SURROGATE = /[\ud800-\udfff]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Lone surrogates as U+FFFD, as they reach the wire in UTF-8 (go-yaml refuses them in JSON text altogether). */
function wellFormed(text: string): string {
  return SURROGATE.test(text) ? text.replace(LONE_SURROGATE, '\ufffd') : text;
}

/** Values JSON.stringify writes (others it leaves out of objects). */
function isJsonValue(value: unknown): boolean {
  return value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';
}

/** A number's, boolean's or null's text as JSON.stringify writes it (which go-yaml then parsed). */
export function jsonScalarText(value: unknown): string {
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'bigint') return String(value);
  return 'null';
}

/** The YAML go-yaml v3 writes for the node it parses from `JSON.stringify(value)` (styles cleared, as gnostic does). */
export function goYaml(value: unknown): string {
  const emitter = new GoYamlEmitter();
  emitter.document(isJsonValue(value) ? value : null);
  return emitter.text;
}
