// Field and label selectors of list, watch and deletecollection requests, parsed as apimachinery parses
// them (pkg/fields, pkg/labels) and rewritten for a tenant. Never lets a selector name another tenant's
// namespace or cluster-scoped object, or drop the tenant's label requirement.
import { TENANT_LABEL, toUpstreamName, type TenantId } from './prefix.ts';
import { badRequest } from '../errors/status-error.ts';

// ---------------------------------------------------------------------------------------------------
// Field selectors: `field=value,field==value,field!=value`, values escaped with `\` (fields.EscapeValue).

export type FieldSelectorOperator = '=' | '==' | '!=';

export interface FieldSelectorTerm {
  field: string;
  operator: FieldSelectorOperator;
  /** The unescaped value. */
  value: string;
  /** The term as written, before unescaping. */
  raw: string;
}

/**
 * The terms of a field selector in the order written (empty terms skipped), or a 400 StatusError.
 * Like fields.ParseSelector: no trimming, the first operator in a term splits it, `\` escapes `\`, `,` and `=`.
 */
export function parseFieldSelector(selector: string): FieldSelectorTerm[] {
  const terms: FieldSelectorTerm[] = [];
  for (const raw of splitFieldTerms(selector)) {
    if (raw === '') continue;
    const split = splitFieldTerm(raw);
    if (split === null) throw badRequest(`invalid field selector: '${selector}'; can't understand '${raw}'`);
    terms.push({ field: split.field, operator: split.operator, value: unescapeFieldValue(split.rawValue), raw });
  }
  return terms;
}

/** fields.EscapeValue: a literal value made safe for a field selector. */
export function escapeFieldSelectorValue(value: string): string {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    out += c === '\\' || c === ',' || c === '=' ? '\\' + c : c;
  }
  return out;
}

/** Splits at commas that are not escaped; escapes stay in the terms. */
function splitFieldTerms(selector: string): string[] {
  if (selector === '') return [];
  const terms: string[] = [];
  let start = 0;
  let escaped = false;
  for (let i = 0; i < selector.length; i++) {
    const c = selector.charCodeAt(i);
    if (escaped) escaped = false;
    else if (c === 92 /* \ */) escaped = true;
    else if (c === 44 /* , */) {
      terms.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(selector.slice(start));
  return terms;
}

function splitFieldTerm(term: string): { field: string; operator: FieldSelectorOperator; rawValue: string } | null {
  for (let i = 0; i < term.length; i++) {
    // `!=` and `==` before `=`, so `a==b` is not the field `a` equal to `=b`.
    if (term.startsWith('!=', i)) return { field: term.slice(0, i), operator: '!=', rawValue: term.slice(i + 2) };
    if (term.startsWith('==', i)) return { field: term.slice(0, i), operator: '==', rawValue: term.slice(i + 2) };
    if (term.charCodeAt(i) === 61 /* = */) return { field: term.slice(0, i), operator: '=', rawValue: term.slice(i + 1) };
  }
  return null;
}

function unescapeFieldValue(raw: string): string {
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === '\\') {
      const next = raw[i + 1];
      if (next === undefined) throw badRequest('invalid field selector: invalid escape sequence: \\');
      if (next !== '\\' && next !== ',' && next !== '=') {
        throw badRequest(`invalid field selector: invalid escape sequence: \\${next}`);
      }
      out += next;
      i++;
    } else if (c === ',' || c === '=') {
      throw badRequest(`invalid field selector: unescaped character in value: '${c}'`);
    } else {
      out += c;
    }
  }
  return out;
}

export interface FieldSelectorScope {
  /** The listed resource is cluster-scoped: its `metadata.name` values are upstream names. */
  clusterScoped: boolean;
  /** The listed resource (plural), e.g. `namespaces`, `events`. */
  resource: string;
  /** How `metadata.name` values map upstream when prefixed (CRD names prefix their group part). Default: `<id>-<name>`. */
  nameToUpstream?: (name: string) => string;
  /**
   * Whether objects of a Kind are cluster-scoped tenant objects (prefixed upstream). Used for
   * `involvedObject.name` / `regarding.name` of events when the selector also says `involvedObject.kind`
   * (what `kubectl describe` sends for a cluster-scoped object). Absent: those names are left as is.
   */
  isPrefixedClusterKind?: (kind: string) => boolean;
  /** Other fields of the resource whose values map upstream (a CSR's `spec.signerName`), by field. */
  mappedFields?: Readonly<Record<string, (value: string) => string>>;
}

// Fields whose values are namespace names, on any resource that supports them.
const NAMESPACE_FIELDS = new Set(['metadata.namespace', 'involvedObject.namespace', 'regarding.namespace', 'related.namespace']);
// Event fields naming the referenced object, and the field naming its kind.
const REFERENCE_NAME_KIND: Record<string, string> = {
  'involvedObject.name': 'involvedObject.kind',
  'regarding.name': 'regarding.kind',
  'related.name': 'related.kind',
};

/**
 * The field selector the upstream needs for a tenant's selector: namespace values, and names of
 * cluster-scoped objects, get the tenant prefix; everything else (`spec.nodeName`, `status.phase`, ...)
 * is kept as written. A value that already looks prefixed is prefixed again, so it names the tenant's
 * own object and never another tenant's. An empty value stays empty: it means "no namespace" (what
 * `kubectl describe` sends for cluster-scoped objects), the same upstream. Invalid syntax: 400.
 */
export function rewriteFieldSelector(selector: string, tenant: TenantId, scope: FieldSelectorScope): string {
  const terms = parseFieldSelector(selector);
  const prefixName = scope.clusterScoped || scope.resource === 'namespaces';
  const out: string[] = [];
  for (const term of terms) {
    let prefixed = NAMESPACE_FIELDS.has(term.field) || (prefixName && term.field === 'metadata.name');
    const kindField = REFERENCE_NAME_KIND[term.field];
    if (!prefixed && kindField !== undefined && scope.isPrefixedClusterKind !== undefined) {
      const kind = equalValueOf(terms, kindField);
      prefixed = kind !== null && scope.isPrefixedClusterKind(kind);
    }
    const mapField = scope.mappedFields?.[term.field];
    if (mapField !== undefined) {
      out.push(term.field + term.operator + escapeFieldSelectorValue(mapField(term.value)));
    } else if (prefixed && term.value !== '') {
      const upstream =
        term.field === 'metadata.name' && scope.nameToUpstream !== undefined ? scope.nameToUpstream(term.value) : toUpstreamName(term.value, tenant);
      out.push(term.field + term.operator + escapeFieldSelectorValue(upstream));
    } else {
      out.push(term.raw);
    }
  }
  return out.join(',');
}

/** The value the `=`/`==` terms on a field require, or null when there are none or they disagree. */
function equalValueOf(terms: FieldSelectorTerm[], field: string): string | null {
  let value: string | null = null;
  for (const term of terms) {
    if (term.field !== field || term.operator === '!=') continue;
    if (value !== null && value !== term.value) return null;
    value = term.value;
  }
  return value;
}

// ---------------------------------------------------------------------------------------------------
// Label selectors: `key=value`, `key!=value`, `key in (a,b)`, `key notin (a)`, `key`, `!key`, `key>1`.

export type LabelSelectorOperator = '=' | '==' | '!=' | 'in' | 'notin' | 'exists' | '!' | 'gt' | 'lt';

export interface LabelRequirement {
  key: string;
  operator: LabelSelectorOperator;
  values: string[];
}

/**
 * The requirements of a label selector in the order written, or a 400 StatusError: labels.Parse's
 * grammar, key and value validation. A NUL character is refused outright: the apiserver's lexer stops
 * at it, so anything after it (such as the tenant's own requirement) would silently not apply.
 */
export function parseLabelSelector(selector: string): LabelRequirement[] {
  if (selector.indexOf('\0') !== -1) throw badRequest('invalid label selector: the selector contains a NUL character');
  return new LabelSelectorParser(lexLabelSelector(selector)).parse();
}

/**
 * The label selector sent upstream for a tenant's list or watch: the tenant's requirement
 * `kubezoo.io/tenant=<id>` first (so nothing the client wrote can end it early), then the client's
 * selector as written. A client selector that mentions the key `kubezoo.io/tenant` at all, or does not
 * parse, is refused with 400.
 */
export function mergeLabelSelector(selector: string | null, tenant: TenantId): string {
  const own = `${TENANT_LABEL}=${tenant}`;
  if (selector === null) return own;
  const requirements = parseLabelSelector(selector);
  for (const requirement of requirements) {
    if (requirement.key === TENANT_LABEL) throw badRequest(`the label ${TENANT_LABEL} is reserved`);
  }
  return requirements.length === 0 ? own : `${own},${selector}`;
}

/** Whether an object's labels satisfy every requirement (labels.Selector.Matches), for objects tenantgate serves itself. */
export function labelsMatch(requirements: readonly LabelRequirement[], labels: Readonly<Record<string, string>> | undefined): boolean {
  return requirements.every(({ key, operator, values }) => {
    const value = labels?.[key];
    switch (operator) {
      case '=':
      case '==':
      case 'in':
        return value !== undefined && values.includes(value);
      case '!=':
      case 'notin':
        return value === undefined || !values.includes(value);
      case 'exists':
        return value !== undefined;
      case '!':
        return value === undefined;
      case 'gt':
      case 'lt': {
        const number = Number(value);
        if (value === undefined || !/^-?\d+$/.test(value)) return false;
        return operator === 'gt' ? number > Number(values[0]) : number < Number(values[0]);
      }
    }
  });
}

// Lexer and parser: a transcription of apimachinery's labels.Lexer and labels.Parser, error texts included.

// Token kinds of the label selector lexer (labels.Token).
const T = {
  error: 0,
  end: 1,
  closePar: 2,
  comma: 3,
  doesNotExist: 4,
  doubleEquals: 5,
  equals: 6,
  greaterThan: 7,
  identifier: 8,
  in: 9,
  lessThan: 10,
  notEquals: 11,
  notIn: 12,
  openPar: 13,
} as const;
type Token = (typeof T)[keyof typeof T];

const TOKEN_OF_LITERAL: Record<string, Token> = {
  ')': T.closePar,
  ',': T.comma,
  '!': T.doesNotExist,
  '==': T.doubleEquals,
  '=': T.equals,
  '>': T.greaterThan,
  in: T.in,
  '<': T.lessThan,
  '!=': T.notEquals,
  notin: T.notIn,
  '(': T.openPar,
};

interface Lexeme {
  token: Token;
  literal: string;
}

function isLabelWhitespace(c: string): boolean {
  return c === ' ' || c === '\t' || c === '\r' || c === '\n';
}

function isLabelSpecial(c: string): boolean {
  return c === '=' || c === '!' || c === '(' || c === ')' || c === ',' || c === '>' || c === '<';
}

function lexLabelSelector(s: string): Lexeme[] {
  const lexemes: Lexeme[] = [];
  let pos = 0;
  for (;;) {
    while (pos < s.length && isLabelWhitespace(s[pos]!)) pos++;
    if (pos >= s.length) {
      lexemes.push({ token: T.end, literal: '' });
      return lexemes;
    }
    const start = pos;
    if (isLabelSpecial(s[pos]!)) {
      // Longest special-symbol token: `==` and `!=`, else one character.
      const two = s.slice(pos, pos + 2);
      const literal = two === '==' || two === '!=' ? two : s[pos]!;
      pos += literal.length;
      lexemes.push({ token: TOKEN_OF_LITERAL[literal]!, literal });
    } else {
      while (pos < s.length && !isLabelSpecial(s[pos]!) && !isLabelWhitespace(s[pos]!)) pos++;
      const literal = s.slice(start, pos);
      lexemes.push({ token: literal === 'in' || literal === 'notin' ? TOKEN_OF_LITERAL[literal]! : T.identifier, literal });
    }
  }
}

const BINARY_OPERATORS = 'in, notin, =, ==, !=, gt, lt';
const OPERATOR_OF_TOKEN = new Map<Token, LabelSelectorOperator>([
  [T.in, 'in'],
  [T.notIn, 'notin'],
  [T.equals, '='],
  [T.doubleEquals, '=='],
  [T.notEquals, '!='],
  [T.greaterThan, 'gt'],
  [T.lessThan, 'lt'],
]);

class LabelSelectorParser {
  readonly #lexemes: Lexeme[];
  #position = 0;

  constructor(lexemes: Lexeme[]) {
    this.#lexemes = lexemes;
  }

  // In value position `in` and `notin` are plain identifiers (`x in (in)`).
  #lookahead(asValue: boolean): Lexeme {
    const lexeme = this.#lexemes[this.#position]!;
    return asValue && (lexeme.token === T.in || lexeme.token === T.notIn) ? { token: T.identifier, literal: lexeme.literal } : lexeme;
  }

  #consume(asValue: boolean): Lexeme {
    const lexeme = this.#lookahead(asValue);
    this.#position++;
    return lexeme;
  }

  parse(): LabelRequirement[] {
    const requirements: LabelRequirement[] = [];
    for (;;) {
      const next = this.#lookahead(true);
      if (next.token === T.end) return requirements;
      if (next.token !== T.identifier && next.token !== T.doesNotExist) {
        throw invalidLabelSelector(`found '${next.literal}', expected: !, identifier, or 'end of string'`);
      }
      requirements.push(this.#requirement());
      const after = this.#consume(true);
      if (after.token === T.end) return requirements;
      if (after.token !== T.comma) throw invalidLabelSelector(`found '${after.literal}', expected: ',' or 'end of string'`);
      const following = this.#lookahead(true);
      if (following.token !== T.identifier && following.token !== T.doesNotExist) {
        throw invalidLabelSelector(`found '${following.literal}', expected: identifier after ','`);
      }
    }
  }

  #requirement(): LabelRequirement {
    let first = this.#consume(true);
    const negated = first.token === T.doesNotExist;
    if (negated) first = this.#consume(true);
    if (first.token !== T.identifier) throw invalidRequirement(`found '${first.literal}', expected: identifier`);
    const key = first.literal;
    checkLabelKey(key);
    const next = this.#lookahead(true).token;
    if (negated || next === T.end || next === T.comma) {
      // `!key` followed by an operator is an error upstream too: the operator is then found where `,` belongs.
      return { key, operator: negated ? '!' : 'exists', values: [] };
    }
    const op = this.#consume(false);
    const operator = OPERATOR_OF_TOKEN.get(op.token);
    if (operator === undefined) throw invalidRequirement(`found '${op.literal}', expected: ${BINARY_OPERATORS}`);
    const values = operator === 'in' || operator === 'notin' ? this.#valueSet() : [this.#exactValue()];
    for (const value of values) checkLabelValue(key, value);
    if ((operator === 'gt' || operator === 'lt') && !isGoInt64(values[0]!)) {
      throw invalidRequirement(`values[0]: Invalid value: "${values[0]}": for 'Gt', 'Lt' operators, the value must be an integer`);
    }
    return { key, operator, values };
  }

  #valueSet(): string[] {
    const open = this.#consume(true);
    if (open.token !== T.openPar) throw invalidRequirement(`found '${open.literal}' expected: '('`);
    const first = this.#lookahead(true);
    if (first.token === T.closePar) {
      this.#consume(true);
      return [''];
    }
    if (first.token !== T.identifier && first.token !== T.comma) {
      throw invalidRequirement(`found '${first.literal}', expected: ',', ')' or identifier`);
    }
    const values = new Set<string>();
    for (;;) {
      const item = this.#consume(true);
      if (item.token === T.identifier) {
        values.add(item.literal);
        const after = this.#lookahead(true);
        if (after.token === T.comma) continue;
        if (after.token === T.closePar) break;
        throw invalidRequirement(`found '${after.literal}', expected: ',' or ')'`);
      }
      if (item.token === T.comma) {
        // `(,a)`, `(a,,b)` and `(a,)` hold the empty value.
        if (values.size === 0) values.add('');
        const after = this.#lookahead(true);
        if (after.token === T.closePar) {
          values.add('');
          break;
        }
        if (after.token === T.comma) values.add('');
        continue;
      }
      throw invalidRequirement(`found '${item.literal}', expected: ',', or identifier`);
    }
    const close = this.#consume(true);
    if (close.token !== T.closePar) throw invalidRequirement(`found '${close.literal}', expected: ')'`);
    return [...values];
  }

  #exactValue(): string {
    const next = this.#lookahead(true);
    if (next.token === T.end || next.token === T.comma) return '';
    const value = this.#consume(true);
    if (value.token !== T.identifier) throw invalidRequirement(`found '${value.literal}', expected: identifier`);
    return value.literal;
  }
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** strconv.ParseInt(value, 10, 64) would succeed. */
export function isGoInt64(value: string): boolean {
  if (!/^[+-]?[0-9]+$/.test(value)) return false;
  const n = BigInt(value);
  return n >= INT64_MIN && n <= INT64_MAX;
}

function invalidLabelSelector(message: string) {
  return badRequest(`invalid label selector: ${message}`);
}

function invalidRequirement(message: string) {
  return badRequest(`invalid label selector: unable to parse requirement: ${message}`);
}

const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** content.IsLabelKey: `[prefix/]name`, prefix a DNS subdomain, name at most 63 characters. */
function checkLabelKey(key: string): void {
  const slash = key.indexOf('/');
  const prefix = slash === -1 ? null : key.slice(0, slash);
  const name = slash === -1 ? key : key.slice(slash + 1);
  let why: string | null = null;
  if (name.indexOf('/') !== -1) why = 'a label key may hold at most one "/"';
  else if (prefix !== null && (prefix.length === 0 || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) {
    why = 'the prefix part must be a lowercase DNS subdomain of at most 253 characters';
  } else if (name.length === 0 || name.length > 63 || !LABEL_NAME.test(name)) {
    why = "the name part must be 1-63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character";
  }
  if (why !== null) throw invalidRequirement(`key: Invalid value: "${key}": ${why}`);
}

/** validation.IsValidLabelValue: empty, or at most 63 characters of the label alphabet. */
function checkLabelValue(key: string, value: string): void {
  if (value.length > 63 || !LABEL_VALUE.test(value)) {
    throw invalidRequirement(
      `values[${key}]: Invalid value: "${value}": a label value must be empty or at most 63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character`,
    );
  }
}
