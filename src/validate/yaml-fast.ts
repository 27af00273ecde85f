/**
 * A fast reader for the plain YAML that Project declarations are written in: block mappings and
 * sequences, one-line flow collections, plain and quoted one-line scalars, comments, `---`.
 *
 * The `yaml` library (with positions) is the reference and stays the only parser for anything else:
 * `fastParseAll` returns `undefined` as soon as it meets a construct it does not handle (anchors,
 * tags, block or multi-line scalars, escapes, tabs, CR, duplicate keys, non-string keys, odd
 * indentation, …) or anything the library would report as an error, and the caller falls back. When
 * it returns documents, they are exactly what `parseAllDocuments(text).map(d => d.toJS())` gives
 * (plain scalars resolved with the library's own core-schema tags). It exists for SPEC §10 P2: the
 * library needs ~0.4 s per 1,000 projects, this reader a small fraction of that.
 */
import { Document, isScalar } from 'yaml';

interface ScalarTag {
  default?: unknown;
  tag?: string;
  test?: RegExp;
  resolve: (value: string, onError: (message: string) => void, options: Record<string, unknown>) => unknown;
}

/** The scalar tags the library tests plain scalars against, in its order (core schema). */
const TAGS: ScalarTag[] = (new Document().schema as unknown as { tags: ScalarTag[] }).tags.filter(
  (t) => t.default === true && t.test instanceof RegExp && typeof t.resolve === 'function',
);
const RESOLVE_OPTIONS = { intAsBigInt: false };

class Unsupported extends Error {}
const UNSUPPORTED = new Unsupported();

function fail(): never {
  throw UNSUPPORTED;
}

const resolvedCache = new Map<string, unknown>();

/** A plain scalar as the library resolves it: null, bool, int, float, or the string itself. */
function resolvePlain(text: string): unknown {
  if (resolvedCache.has(text)) return resolvedCache.get(text);
  let out: unknown = text;
  const tag = TAGS.find((t) => t.test!.test(text));
  if (tag && tag.tag !== 'tag:yaml.org,2002:str') {
    let failed = false;
    out = tag.resolve(text, () => (failed = true), RESOLVE_OPTIONS);
    if (failed) fail();
    if (isScalar(out)) out = out.value;
    if (typeof out === 'bigint' || (typeof out === 'object' && out !== null)) fail();
  }
  if (resolvedCache.size < 50_000) resolvedCache.set(text, out);
  return out;
}

/** Characters a plain scalar may not start with (we also refuse `?` and `:` starts, and `-` + space). */
const PLAIN_START_FORBIDDEN = new Set([...',[]{}#&*!|>\'"%@`?:']);

interface Line {
  indent: number;
  /** Text after the indentation (comments still in). */
  text: string;
}

class Reader {
  private pos = 0;
  constructor(private readonly lines: Line[]) {}

  /** The current line, after blank and comment lines. */
  peek(): Line | undefined {
    while (this.pos < this.lines.length) {
      const line = this.lines[this.pos]!;
      if (line.text !== '' && line.text[0] !== '#') return line;
      this.pos++;
    }
    return undefined;
  }

  /** Replaces the current line by its remainder from `column` (a "- " item's content). */
  shift(column: number): void {
    const line = this.lines[this.pos]!;
    const cut = column - line.indent;
    this.lines[this.pos] = { indent: column, text: line.text.slice(cut) };
  }

  next(): void {
    this.pos++;
  }

  /** A block node starting at the current line, whose indentation is `indent`. */
  block(indent: number): unknown {
    const line = this.peek();
    if (!line || line.indent !== indent) fail();
    if (isDash(line.text)) return this.sequence(indent);
    if (entryKey(line.text) !== undefined) return this.mapping(indent);
    fail();
  }

  private sequence(indent: number, indentless = false): unknown[] {
    const out: unknown[] = [];
    for (let line = this.peek(); line && line.indent === indent && isDash(line.text); line = this.peek()) {
      let rest = 1;
      while (line.text[rest] === ' ') rest++;
      const content = line.text.slice(rest);
      if (content === '' || content[0] === '#') {
        this.next();
        out.push(this.nestedOrNull(indent));
        continue;
      }
      const column = indent + rest;
      if (isDash(content) || entryKey(content) !== undefined) {
        this.shift(column);
        out.push(this.block(column));
        continue;
      }
      out.push(inlineValue(content));
      this.next();
      this.noContinuation(indent);
    }
    const following = this.peek();
    // An indentless sequence gives way to the next key of the mapping it is a value in.
    if (following && (following.indent > indent || (following.indent === indent && !indentless))) fail();
    return out;
  }

  private mapping(indent: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const seen = new Set<string>();
    for (let line = this.peek(); line && line.indent === indent && !isDash(line.text); line = this.peek()) {
      const entry = entryKey(line.text);
      if (entry === undefined) fail();
      const { key, rest } = entry;
      if (seen.has(key) || key === '__proto__' || key === '<<') fail();
      seen.add(key);
      const valueText = trimStart(rest);
      if (valueText === '' || valueText[0] === '#') {
        this.next();
        const following = this.peek();
        // An indentless sequence: "key:" followed by "- item" at the key's own indentation.
        out[key] = following && following.indent === indent && isDash(following.text) ? this.sequence(indent, true) : this.nestedOrNull(indent);
        continue;
      }
      out[key] = inlineValue(valueText);
      this.next();
      this.noContinuation(indent);
    }
    this.endOfBlock(indent);
    return out;
  }

  /** After "key:" or "-" with nothing else: a more indented block, or null. */
  private nestedOrNull(indent: number): unknown {
    const following = this.peek();
    if (!following || following.indent <= indent) return null;
    if (isDash(following.text) || entryKey(following.text) !== undefined) return this.block(following.indent);
    // A one-line scalar or flow collection on a line of its own ("key:\n  {}").
    const value = inlineValue(following.text);
    this.next();
    this.noContinuation(indent);
    return value;
  }

  /** A one-line value must not continue on more indented lines (multi-line scalars are not handled). */
  private noContinuation(indent: number): void {
    const following = this.peek();
    if (following && following.indent > indent) fail();
  }

  /** A block ends at a less indented line; anything else at this level is not ours to interpret. */
  private endOfBlock(indent: number): void {
    const following = this.peek();
    if (following && following.indent >= indent) fail();
  }
}

/** YAML's white space is the space (tabs are refused up front); JS trim would also eat NBSP & co. */
function trimEnd(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 32) end--;
  return end === text.length ? text : text.slice(0, end);
}

function trimStart(text: string): string {
  let start = 0;
  while (text.charCodeAt(start) === 32) start++;
  return start === 0 ? text : text.slice(start);
}

function isDash(text: string): boolean {
  return text[0] === '-' && (text.length === 1 || text[1] === ' ');
}

/** "key: rest" or "key:" → the key and what follows the colon; undefined when the line is not an entry. */
function entryKey(text: string): { key: string; rest: string } | undefined {
  const first = text[0];
  if (first === '"' || first === "'") {
    const quoted = readQuoted(text, 0);
    if (!quoted) return undefined;
    if (text[quoted.end] !== ':') return undefined;
    const after = text[quoted.end + 1];
    if (after !== undefined && after !== ' ') fail();
    return { key: quoted.value, rest: text.slice(quoted.end + 1) };
  }
  // A flow collection is a value (a flow collection as a key is left to the library by inlineValue).
  if (first === '{' || first === '[') return undefined;
  const colon = findColon(text, 0);
  if (colon < 0) return undefined;
  const raw = text.slice(0, colon);
  if (raw === '' || raw.length > 1000 || raw.endsWith(' ') || PLAIN_START_FORBIDDEN.has(raw[0]!) || (raw[0] === '-' && (raw.length === 1 || raw[1] === ' ')) || raw.includes(' #')) fail();
  const key = resolvePlain(raw);
  if (typeof key !== 'string') fail();
  return { key, rest: text.slice(colon + 1) };
}

/** The first ":" followed by a space or the end of the text (a mapping indicator), or -1. */
function findColon(text: string, from: number): number {
  for (let i = text.indexOf(':', from); i !== -1; i = text.indexOf(':', i + 1)) {
    const next = text[i + 1];
    if (next === undefined || next === ' ') return i;
  }
  return -1;
}

/** A one-line quoted scalar starting at `start`; undefined (caller fails) for escapes or no end. */
function readQuoted(text: string, start: number): { value: string; end: number } | undefined {
  const quote = text[start];
  if (quote === '"') {
    const end = text.indexOf('"', start + 1);
    if (end < 0) fail();
    const value = text.slice(start + 1, end);
    if (value.includes('\\')) fail();
    return { value, end: end + 1 };
  }
  let value = '';
  let i = start + 1;
  for (;;) {
    const end = text.indexOf("'", i);
    if (end < 0) fail();
    value += text.slice(i, end);
    if (text[end + 1] === "'") {
      value += "'";
      i = end + 2;
      continue;
    }
    return { value, end: end + 1 };
  }
}

/** Only spaces or a comment may follow a value on its line. */
function checkTrailing(text: string, from: number): void {
  let i = from;
  while (text[i] === ' ') i++;
  if (i === text.length) return;
  if (text[i] === '#' && i > from) return;
  fail();
}

/** The value after "key: " or "- ": a one-line flow collection, quoted or plain scalar. */
function inlineValue(text: string): unknown {
  const first = text[0]!;
  if (first === '{' || first === '[') {
    const flow = new FlowReader(text);
    const value = flow.value();
    checkTrailing(text, flow.pos);
    return value;
  }
  if (first === '"' || first === "'") {
    const quoted = readQuoted(text, 0)!;
    checkTrailing(text, quoted.end);
    return quoted.value;
  }
  if (PLAIN_START_FORBIDDEN.has(first) || (first === '-' && (text.length === 1 || text[1] === ' '))) fail();
  const comment = text.indexOf(' #');
  const raw = trimEnd(comment < 0 ? text : text.slice(0, comment));
  // "a: b: c" is an error for the library, "a: b:" too.
  if (findColon(raw, 0) >= 0) fail();
  return resolvePlain(raw);
}

const FLOW_PLAIN_END = new Set([...',[]{}:#']);

class FlowReader {
  pos = 0;
  constructor(private readonly text: string) {}

  private spaces(): void {
    while (this.text[this.pos] === ' ') this.pos++;
  }

  value(): unknown {
    this.spaces();
    const c = this.text[this.pos];
    if (c === '{') return this.map();
    if (c === '[') return this.seq();
    if (c === '"' || c === "'") {
      const quoted = readQuoted(this.text, this.pos)!;
      this.pos = quoted.end;
      return quoted.value;
    }
    return resolvePlain(this.plain());
  }

  /** A plain scalar in flow context: we stop at flow indicators and refuse ":" and "#" inside. */
  private plain(): string {
    const start = this.pos;
    const first = this.text[start];
    if (first === undefined || PLAIN_START_FORBIDDEN.has(first) || (first === '-' && (this.text[start + 1] ?? ' ') === ' ')) fail();
    let i = start;
    while (i < this.text.length && !FLOW_PLAIN_END.has(this.text[i]!)) i++;
    const c = this.text[i];
    if (c === '#') fail();
    if (c === ':' && this.text[i + 1] !== ' ') fail();
    this.pos = i;
    const raw = trimEnd(this.text.slice(start, i));
    if (raw === '') fail();
    return raw;
  }

  private map(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.pos++; // {
    this.spaces();
    if (this.text[this.pos] === '}') {
      this.pos++;
      return out;
    }
    for (;;) {
      this.spaces();
      let key: unknown;
      const c = this.text[this.pos];
      if (c === '"' || c === "'") {
        const quoted = readQuoted(this.text, this.pos)!;
        this.pos = quoted.end;
        key = quoted.value;
      } else {
        if (c === '{' || c === '[') fail();
        key = resolvePlain(this.plain());
      }
      if (typeof key !== 'string' || key === '__proto__' || key === '<<' || Object.prototype.hasOwnProperty.call(out, key)) fail();
      this.spaces();
      if (this.text[this.pos] !== ':' || this.text[this.pos + 1] !== ' ') fail();
      this.pos += 2;
      out[key] = this.value();
      this.spaces();
      const sep = this.text[this.pos];
      if (sep === '}') {
        this.pos++;
        return out;
      }
      if (sep !== ',') fail();
      this.pos++;
      this.spaces();
      if (this.text[this.pos] === '}') fail(); // trailing comma: left to the library
    }
  }

  private seq(): unknown[] {
    const out: unknown[] = [];
    this.pos++; // [
    this.spaces();
    if (this.text[this.pos] === ']') {
      this.pos++;
      return out;
    }
    for (;;) {
      const c = (this.spaces(), this.text[this.pos]);
      // "[a: b]" (a single-pair map) and "[? x]" are left to the library.
      const before = this.pos;
      out.push(this.value());
      if (c !== '{' && c !== '[' && c !== '"' && c !== "'" && this.text[this.pos] === ':') fail();
      if (this.pos === before) fail();
      this.spaces();
      const sep = this.text[this.pos];
      if (sep === ':') fail();
      if (sep === ']') {
        this.pos++;
        return out;
      }
      if (sep !== ',') fail();
      this.pos++;
      this.spaces();
      if (this.text[this.pos] === ']') fail();
    }
  }
}

/** One document's lines → its value (null when it has no content). */
function parseDocument(lines: Line[]): unknown {
  const reader = new Reader(lines);
  const first = reader.peek();
  if (!first) return null;
  if (first.indent !== 0) fail();
  const value = reader.block(0);
  if (reader.peek()) fail();
  return value;
}

/**
 * The documents of a YAML stream as the library's `parseAllDocuments(text)` + `toJS()` would give
 * them (null for an empty document), or undefined when the text needs the library.
 */
export function fastParseAll(text: string): unknown[] | undefined {
  // Tabs, CR, BOM, other control characters, NEL/LS/PS and lone surrogates: the library's business.
  if (/[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\uFEFF]|[\uD800-\uDFFF]/u.test(text)) return undefined;
  try {
    const documents: unknown[] = [];
    let current: Line[] = [];
    let seenMarker = false;
    const flush = (always: boolean) => {
      const hasContent = current.some((l) => l.text !== '' && l.text[0] !== '#');
      if (always || hasContent) documents.push(parseDocument(current));
      current = [];
    };
    let start = 0;
    while (start <= text.length) {
      let end = text.indexOf('\n', start);
      if (end < 0) end = text.length;
      const raw = text.slice(start, end);
      start = end + 1;
      if (raw.startsWith('---')) {
        const rest = trimStart(raw.slice(3));
        if (raw.length > 3 && raw[3] !== ' ') fail();
        if (rest !== '' && rest[0] !== '#') fail();
        flush(seenMarker);
        seenMarker = true;
        continue;
      }
      if (raw.startsWith('...') || raw.startsWith('%')) fail();
      let indent = 0;
      while (raw.charCodeAt(indent) === 32) indent++;
      const body = trimEnd(raw.slice(indent));
      current.push({ indent, text: body });
    }
    flush(seenMarker);
    return documents;
  } catch (err) {
    if (err instanceof Unsupported) return undefined;
    throw err;
  }
}
