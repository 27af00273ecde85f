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
/**
 * Line breaks (the library looks for document markers after any JS line terminator), tabs (escaped
 * when quoted) and document markers: not handled here.
 */
const SPECIAL = /[\n\r\t\u2028\u2029]|^(?:---|\.\.\.|%)/;

class Unsupported extends Error {}
const UNSUPPORTED = new Unsupported();

const CACHE_LIMIT = 200_000;
/** value → its plain or quoted form. */
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
  if (scalarCache.size < CACHE_LIMIT) scalarCache.set(value, out);
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

/** value → " <scalar>\n", the rest of a "key:" or "-" line. */
const lineEndCache = new Map<string, string>();
function scalarLineEnd(value: unknown): string {
  // Only strings are cached: a Map would not tell 0 from -0.
  if (typeof value !== 'string') return ` ${scalar(value)}\n`;
  const cached = lineEndCache.get(value);
  if (cached !== undefined) return cached;
  const out = ` ${str(value)}\n`;
  if (lineEndCache.size < CACHE_LIMIT) lineEndCache.set(value, out);
  return out;
}

/** Per depth: key → "<indent><key>:". */
const keyCache: Array<Map<string, string>> = [];
function keyPrefix(depth: number, key: string): string {
  let byKey = keyCache[depth];
  if (!byKey) keyCache[depth] = byKey = new Map();
  const cached = byKey.get(key);
  if (cached !== undefined) return cached;
  const out = `${indentOf(depth)}${str(key)}:`;
  if (byKey.size < CACHE_LIMIT) byKey.set(key, out);
  return out;
}

const INDENTS: string[] = [''];
const DASHES: string[] = ['-'];
function indentOf(depth: number): string {
  while (INDENTS.length <= depth) INDENTS.push(INDENTS[INDENTS.length - 1] + '  ');
  return INDENTS[depth]!;
}
function dashAt(depth: number): string {
  while (DASHES.length <= depth) DASHES.push(indentOf(DASHES.length) + '-');
  return DASHES[depth]!;
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Output pieces (mostly cached "<indent><key>:" and " <scalar>\n" strings) and the objects met. */
interface Emit {
  out: string[];
  /** The collections met so far: a short list (most objects are small), a Set beyond that. */
  seen: object[];
  seenSet: Set<object> | undefined;
}

const SEEN_LIST_MAX = 32;

function enter(e: Emit, value: object): void {
  // The library prints an object met twice as an anchor and an alias.
  if (e.seenSet) {
    if (e.seenSet.has(value)) throw UNSUPPORTED;
    e.seenSet.add(value);
  } else {
    const seen = e.seen;
    for (let i = 0; i < seen.length; i++) if (seen[i] === value) throw UNSUPPORTED;
    seen.push(value);
    if (seen.length > SEEN_LIST_MAX) e.seenSet = new Set(seen);
  }
  if (!Array.isArray(value) && !isPlainObject(value)) throw UNSUPPORTED;
}

function hasEntries(value: Record<string, unknown>): boolean {
  for (const key in value) if (Object.prototype.hasOwnProperty.call(value, key) && value[key] !== undefined) return true;
  return false;
}

/** Emits `value` after "key:" or "-" (already written); its block content sits at `depth`. */
function node(e: Emit, value: unknown, depth: number, afterDash: boolean): void {
  if (value === null || typeof value !== 'object') {
    e.out.push(scalarLineEnd(value));
    return;
  }
  enter(e, value);
  if (Array.isArray(value)) {
    if (value.length === 0) {
      e.out.push(' []\n');
      return;
    }
    e.out.push(afterDash ? ' ' : '\n');
    seq(e, value, depth, afterDash);
    return;
  }
  const object = value as Record<string, unknown>;
  if (!hasEntries(object)) {
    e.out.push(' {}\n');
    return;
  }
  e.out.push(afterDash ? ' ' : '\n');
  map(e, object, depth, afterDash);
}

/** A block sequence at `depth`; the first item continues the current line when `inline`. */
function seq(e: Emit, items: unknown[], depth: number, inline: boolean): void {
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (item === undefined || typeof item === 'function' || typeof item === 'symbol') throw UNSUPPORTED;
    e.out.push(i === 0 && inline ? '-' : dashAt(depth));
    node(e, item, depth + 1, true);
  }
}

/** A block mapping at `depth` (undefined values are left out, as the library does). */
function map(e: Emit, object: Record<string, unknown>, depth: number, inline: boolean): void {
  let first = true;
  for (const key of Object.keys(object)) {
    const value = object[key];
    if (value === undefined) continue;
    if (typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') throw UNSUPPORTED;
    e.out.push(keyPrefix(first && inline ? 0 : depth, key));
    first = false;
    // Sequences under a key are indented one step (the library's indentSeq), maps too.
    node(e, value, depth + 1, false);
  }
}

const SEEN: object[] = [];

/**
 * Appends the YAML of `value` to `out` and returns true, or leaves `out` as it was and returns false
 * when the value needs the library.
 */
export function fastStringifyInto(out: string[], value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  const mark = out.length;
  SEEN.length = 0;
  const e: Emit = { out, seen: SEEN, seenSet: undefined };
  try {
    enter(e, value);
    if (Array.isArray(value)) {
      if (value.length === 0) out.push('[]\n');
      else seq(e, value, 0, false);
    } else if (!hasEntries(value as Record<string, unknown>)) {
      out.push('{}\n');
    } else {
      map(e, value as Record<string, unknown>, 0, false);
    }
    SEEN.length = 0;
    return true;
  } catch (err) {
    SEEN.length = 0;
    out.length = mark;
    if (err instanceof Unsupported) return false;
    throw err;
  }
}

/** The fast path alone: `undefined` when the value needs the library. */
export function fastStringify(value: unknown): string | undefined {
  const out: string[] = [];
  return fastStringifyInto(out, value) ? out.join('') : undefined;
}

/** A YAML stream of `---`-separated objects, each as `stringify(o, { lineWidth: 0 })` prints it. */
export function toYamlStream(objects: Iterable<unknown>): string {
  // Pieces are joined in chunks of a few hundred objects: a chunk is big enough to be allocated
  // outside the young generation, so the output is never copied by scavenges; per-object strings
  // (or one array for the whole stream) made garbage collection the main cost at 10,000 projects.
  const chunks: string[] = [];
  const pieces: string[] = [];
  for (const o of objects) {
    pieces.push('---\n');
    if (!fastStringifyInto(pieces, o)) pieces.push(stringify(o, { lineWidth: 0 }));
    if (pieces.length >= CHUNK_PIECES) {
      chunks.push(pieces.join(''));
      pieces.length = 0;
    }
  }
  chunks.push(pieces.join(''));
  return chunks.length === 1 ? chunks[0]! : chunks.join('');
}

const CHUNK_PIECES = 1 << 15;

/** `stringify(value, { lineWidth: 0 })`, fast for the objects render emits. */
export function toYaml(value: unknown): string {
  return fastStringify(value) ?? stringify(value, { lineWidth: 0 });
}
