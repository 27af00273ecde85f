/**
 * Offline validation of a Project against PROJECT_SCHEMA with ajv (rule S1).
 *
 * The apiserver prunes unknown fields of a structural schema silently; offline we would rather catch
 * typos (`quotas:` for `quota:`), so the root and every object under `spec` that lists its
 * `properties` is closed (`additionalProperties: false`) in the copy of the schema given to ajv.
 * The `x-kubernetes-*` keywords are registered as known, annotation-only keywords.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { FieldPath, Violation } from '../types.js';
import { isQuantitySchema, PATTERN_MEANINGS, PROJECT_SCHEMA, type StructuralSchema } from './project-schema.js';

const K8S_KEYWORDS = [
  'x-kubernetes-int-or-string',
  'x-kubernetes-validations',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-embedded-resource',
];

/** RFC 3339 date-time, as the apiserver's `date-time` format accepts it. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** How the document itself is named in messages (an empty field path). */
const ROOT = 'the document';

const QUANTITY_MEANING = 'a Kubernetes quantity such as 500m, 2, 1.5Gi';

/** A deep copy of the schema whose objects with `properties` are closed, at the root and under `spec`. */
function closeObjects(s: StructuralSchema, close: boolean): StructuralSchema {
  const out: StructuralSchema = { ...s };
  if (s.properties) {
    out.properties = {};
    for (const [k, v] of Object.entries(s.properties)) {
      // metadata belongs to the apiserver, status to the controller: left open.
      out.properties[k] = closeObjects(v, close && k !== 'status' && k !== 'metadata');
    }
    if (close && s.additionalProperties === undefined) {
      (out as Record<string, unknown>)['additionalProperties'] = false;
    }
  }
  if (s.additionalProperties) out.additionalProperties = closeObjects(s.additionalProperties, close);
  if (s.items) out.items = closeObjects(s.items, close);
  return out;
}

let compiled: ValidateFunction | undefined;

function validator(): ValidateFunction {
  if (!compiled) {
    const ajv = new Ajv({ allErrors: true, strict: false, verbose: true, allowUnionTypes: true });
    for (const keyword of K8S_KEYWORDS) ajv.addKeyword(keyword);
    ajv.addFormat('date-time', DATE_TIME);
    compiled = ajv.compile(closeObjects(PROJECT_SCHEMA, true));
  }
  return compiled;
}

/** ajv instancePath ("/spec/owners/0/kind") → segments, array indexes as numbers. */
function toSegments(instancePath: string, root: unknown): Array<string | number> {
  if (instancePath === '') return [];
  const segments: Array<string | number> = [];
  let cur: unknown = root;
  for (const raw of instancePath.slice(1).split('/')) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur) && /^\d+$/.test(seg)) {
      segments.push(Number(seg));
      cur = cur[Number(seg)];
    } else {
      segments.push(seg);
      cur = cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[seg] : undefined;
    }
  }
  return segments;
}

/**
 * Kubernetes field-path notation: `.field` for properties, `[0]` for items, `[key]` for map keys
 * (e.g. `spec.quota.hard[requests.cpu]`), decided by walking the schema alongside the path.
 */
export function formatFieldPath(path: FieldPath): string {
  let out = '';
  let schema: StructuralSchema | undefined = PROJECT_SCHEMA;
  for (const seg of path) {
    if (typeof seg === 'number') {
      out += `[${seg}]`;
      schema = schema?.items;
    } else if (schema?.properties && seg in schema.properties) {
      out += out === '' ? seg : `.${seg}`;
      schema = schema.properties[seg];
    } else if (schema?.additionalProperties) {
      out += `[${seg}]`;
      schema = schema.additionalProperties;
    } else {
      out += out === '' ? seg : `.${seg}`;
      schema = undefined;
    }
  }
  return out === '' ? ROOT : out;
}

function show(value: unknown): string {
  if (value === undefined) return 'undefined';
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a map';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a fractional number';
  return `a ${typeof value}`;
}

const TYPE_WORDS: Record<string, string> = {
  object: 'a map',
  array: 'a list',
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'a boolean (true or false)',
};

/** Levenshtein distance, for "did you mean" on unknown fields. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      cur[j] = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
    }
    prev = cur;
  }
  return prev[b.length] ?? 0;
}

function suggestion(unknown: string, known: string[]): string {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = distance(unknown.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) {
      bestDistance = d;
      best = k;
    }
  }
  return best !== undefined && bestDistance <= Math.max(1, Math.floor(unknown.length / 3))
    ? `; did you mean ${best}?`
    : '';
}

function describe(e: ErrorObject, field: string, subject: string): { message: string; extra?: string } {
  const where = `${subject}${field}`;
  const schema = e.parentSchema as StructuralSchema | undefined;
  switch (e.keyword) {
    case 'required': {
      const missing = String((e.params as { missingProperty: string }).missingProperty);
      return { message: `${subject}${field === ROOT ? missing : `${field}.${missing}`} is required`, extra: missing };
    }
    case 'additionalProperties': {
      const prop = String((e.params as { additionalProperty: string }).additionalProperty);
      const known = Object.keys(schema?.properties ?? {});
      const child = field === ROOT ? prop : `${field}.${prop}`;
      return {
        message: `${subject}${child} is not a known field (${field} has ${known.join(', ')})${suggestion(prop, known)}`,
        extra: prop,
      };
    }
    case 'enum': {
      const allowed = ((e.params as { allowedValues: unknown[] }).allowedValues ?? []).map(String);
      return { message: `${where} is ${show(e.data)}, must be one of ${allowed.join(', ')}` };
    }
    case 'type': {
      const want = String((e.params as { type: string }).type)
        .split(',')
        .map((t) => TYPE_WORDS[t] ?? t)
        .join(' or ');
      return { message: `${where} is ${show(e.data)} (${typeName(e.data)}), must be ${want}` };
    }
    case 'pattern': {
      const pattern = String((e.params as { pattern: string }).pattern);
      const meaning = PATTERN_MEANINGS[pattern] ?? `a string matching ${pattern}`;
      return { message: `${where} is ${show(e.data)}, must be ${meaning}` };
    }
    case 'maxLength':
      return {
        message:
          `${where} is ${show(e.data)} (${String(e.data).length} characters), must be at most ` +
          `${String((e.params as { limit: number }).limit)} characters`,
      };
    case 'minLength':
      return { message: `${where} must not be empty` };
    case 'minimum':
      return {
        message: `${where} is ${show(e.data)}, must be at least ${String((e.params as { limit: number }).limit)}`,
      };
    case 'maximum':
      return {
        message: `${where} is ${show(e.data)}, must be at most ${String((e.params as { limit: number }).limit)}`,
      };
    case 'format':
      return {
        message: `${where} is ${show(e.data)}, must be ${
          (e.params as { format: string }).format === 'date-time'
            ? 'an RFC 3339 date-time such as 2025-01-31T12:00:00Z'
            : `a ${String((e.params as { format: string }).format)}`
        }`,
      };
    default:
      return { message: `${where} ${e.message ?? 'is invalid'} (value ${show(e.data)})` };
  }
}

/** The S1 violations of a Project document (empty when it matches the schema). */
export function validateProjectSchema(obj: unknown): Violation[] {
  const validate = validator();
  if (validate(obj)) return [];
  const errors = validate.errors ?? [];

  const name =
    obj !== null && typeof obj === 'object' && !Array.isArray(obj)
      ? ((obj as { metadata?: { name?: unknown } }).metadata?.name ?? undefined)
      : undefined;
  const subject = typeof name === 'string' && name !== '' ? `Project ${name}: ` : 'Project: ';

  // A quantity failing (wrong string, or a fraction / boolean that is neither integer nor string)
  // gives several ajv errors at one instancePath (anyOf, both branches, pattern): report it once.
  const quantityPaths = new Set(
    errors.filter((e) => isQuantitySchema(e.parentSchema as StructuralSchema | undefined)).map((e) => e.instancePath),
  );

  const out: Violation[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    let path: Array<string | number> = toSegments(e.instancePath, obj);
    let message: string;
    if (quantityPaths.has(e.instancePath)) {
      if (seen.has(`q:${e.instancePath}`)) continue;
      seen.add(`q:${e.instancePath}`);
      const hint = typeof e.data === 'number' ? ' (write fractions as strings, e.g. "0.5" or 500m)' : '';
      message = `${subject}${formatFieldPath(path)} is ${show(e.data)}, must be ${QUANTITY_MEANING}${hint}`;
    } else {
      const d = describe(e, formatFieldPath(path), subject);
      message = d.message;
      // An unknown field is located at the field itself (it exists in the file); a missing one at
      // its parent object (the closest thing that exists).
      if (e.keyword === 'additionalProperties' && d.extra !== undefined) path = [...path, d.extra];
    }
    const key = `${message}\u0000${path.join('/')}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ rule: 'S1', message, path });
  }
  return out;
}
