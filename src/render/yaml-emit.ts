/**
 * A fast YAML emitter for the plain JSON-like objects `render` prints. Its output is byte-identical
 * to `stringify(value, { lineWidth: 0 })` of the `yaml` library (block style, 2-space indent,
 * sequences indented, plain scalars where the library would print them plain, double quotes where it
 * would quote). Anything it is not sure about (multi-line or escaped strings, shared references that
 * the library would print as anchors, class instances, …) makes it give up, and the caller uses the
 * library: the fast path is an optimisation only (SPEC §10 P2), never a second YAML dialect.
 */
import { Document, stringify } from 'yaml';

/** The non-string scalar tags of the library's default (core) schema, as its plainString tests them. */
const RESOLVING_TAGS: RegExp[] = (() => {
  const tags = (new Document().schema as unknown as { tags: Array<{ default?: unknown; tag?: string; test?: RegExp }> }).tags;
  return tags.filter((t) => t.default && t.tag !== 'tag:yaml.org,2002:str' && t.test instanceof RegExp).map((t) => t.test!);
})();

/** Strings that cannot be plain (yaml's plainString): indicators, ": ", " #", leading/trailing space… */
const NOT_PLAIN = /^[\n\t ,[\]{}#&*!|>'"%@`]|^[?-]$|^[?-][ \t]|[\n:][ \t]|[ \t]\n|[\n\t ]#|[\n\t :]$/;
/** Control characters and lone surrogates: the library forces (escaped) double quotes. */
const NEEDS_ESCAPES = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u{D800}-\u{DFFF}]/u;
/** Document markers and newlines change how the library prints a scalar: not handled here. */
const SPECIAL = /\n|^(?:---|\.\.\.|%)/;

class Unsupported extends Error {}
const UNSUPPORTED = new Unsupported();

const scalarCache = new Map<string, string>();

function str(value: string): string {
  const cached = scalarCache.get(value);
  if (cached !== undefined) return cached;
  if (value.length > 1000 || SPECIAL.test(value) || NEEDS_ESCAPES.test(value)) throw UNSUPPORTED;
  let out = value;
  if (NOT_PLAIN.test(value) || RESOLVING_TAGS.some((re) => re.test(value))) {
    // The library picks single quotes for strings with only double quotes, and escapes backslashes.
    if (value.includes('"') || value.includes('\\')) throw UNSUPPORTED;
    out = `"${value}"`;
  }
  if (scalarCache.size < 100_000) scalarCache.set(value, out);
  return out;
}

function scalar(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return str(value);
    case 'number':
      if (Object.is(value, -0)) return '-0';
      if (!Number.isFinite(value)) return Number.isNaN(value) ? '.nan' : value < 0 ? '-.inf' : '.inf';
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    default:
      if (value === null) return 'null';
      throw UNSUPPORTED;
  }
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

type Emit = { out: string; seen: Set<object> };

/** Non-empty collection check, after dropping undefined map values as the library does. */
function entries(value: Record<string, unknown>): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  for (const key of Object.keys(value)) {
    const v = value[key];
    if (v !== undefined) out.push([key, v]);
  }
  return out;
}

function enter(e: Emit, value: object): void {
  // The library prints an object met twice as an anchor and an alias.
  if (e.seen.has(value)) throw UNSUPPORTED;
  e.seen.add(value);
  if (!Array.isArray(value) && !isPlainObject(value)) throw UNSUPPORTED;
}

/** Emits `value` as the value after "key:" or "-" (the caller wrote that), at nesting `indent`. */
function node(e: Emit, value: unknown, indent: string, afterDash: boolean): void {
  if (value === null || typeof value !== 'object') {
    e.out += ` ${scalar(value)}\n`;
    return;
  }
  enter(e, value);
  if (Array.isArray(value)) {
    if (value.length === 0) {
      e.out += ' []\n';
      return;
    }
    if (afterDash) {
      e.out += ' ';
      seq(e, value, indent, true);
    } else {
      e.out += '\n';
      seq(e, value, indent, false);
    }
    return;
  }
  const pairs = entries(value);
  if (pairs.length === 0) {
    e.out += ' {}\n';
    return;
  }
  if (afterDash) {
    e.out += ' ';
    map(e, pairs, indent, true);
  } else {
    e.out += '\n';
    map(e, pairs, indent, false);
  }
}

/** A block sequence whose items sit at `indent`; the first one continues the current line when `inline`. */
function seq(e: Emit, items: unknown[], indent: string, inline: boolean): void {
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (item === undefined || typeof item === 'function' || typeof item === 'symbol') throw UNSUPPORTED;
    e.out += i === 0 && inline ? '-' : `${indent}-`;
    node(e, item, indent + '  ', true);
  }
}

function map(e: Emit, pairs: Array<[string, unknown]>, indent: string, inline: boolean): void {
  for (let i = 0; i < pairs.length; i++) {
    const [key, value] = pairs[i]!;
    if (typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') throw UNSUPPORTED;
    e.out += i === 0 && inline ? `${str(key)}:` : `${indent}${str(key)}:`;
    // Sequences under a key are indented one step (indentSeq), maps too.
    node(e, value, indent + '  ', false);
  }
}

/** The fast path: `undefined` when the value needs the library. */
export function fastStringify(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const e: Emit = { out: '', seen: new Set() };
  try {
    enter(e, value);
    if (Array.isArray(value)) {
      if (value.length === 0) return '[]\n';
      seq(e, value, '', false);
    } else {
      const pairs = entries(value);
      if (pairs.length === 0) return '{}\n';
      map(e, pairs, '', false);
    }
    return e.out;
  } catch (err) {
    if (err instanceof Unsupported) return undefined;
    throw err;
  }
}

/** `stringify(value, { lineWidth: 0 })`, fast for the objects render emits. */
export function toYaml(value: unknown): string {
  return fastStringify(value) ?? stringify(value, { lineWidth: 0 });
}
