/**
 * JSON Patch (RFC 6902) operations for edits of an object's metadata, built directly: the mutations set
 * a few entries of a string map (labels, annotations) or append to a list (finalizers), so the object is
 * neither cloned nor diffed. The operations and their order are those a diff of the whole object would
 * give (fast-json-patch's `compare`, which the mutations used before; test/unit/mutate-patches.test.ts
 * compares both on generated inputs): within an existing map, replaced keys first (in reverse key order),
 * then added ones (in the order they were set); in `metadata`, its existing fields in reverse key order,
 * then the fields it did not have, whole.
 */
export interface PatchOperation {
  op: 'add' | 'replace';
  path: string;
  value: unknown;
}

/** A JSON Pointer reference token: `~` as `~0`, `/` as `~1`. */
export function escapePointer(key: string): string {
  if (key.indexOf('/') === -1 && key.indexOf('~') === -1) return key;
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const has = (o: object, key: string) => Object.prototype.hasOwnProperty.call(o, key);

/** One field of `metadata` as a mutation leaves it: a map with entries set, or a list with values appended. */
export type FieldEdit = { kind: 'map'; value: Record<string, string> } | { kind: 'list'; value: unknown[] };

/**
 * The operations for one edited field whose old value is `before` (present in metadata): a map or list
 * edited in place, or replaced whole when its old value was of another shape.
 */
function fieldOps(path: string, before: unknown, edit: FieldEdit, out: PatchOperation[]): void {
  if (edit.kind === 'list') {
    if (!Array.isArray(before)) return void out.push({ op: 'replace', path, value: edit.value });
    // Appended only: the old elements are unchanged, the new ones added at their indices.
    for (let i = before.length; i < edit.value.length; i++)
      out.push({ op: 'add', path: `${path}/${i}`, value: edit.value[i] });
    return;
  }
  if (!isRecord(before)) return void out.push({ op: 'replace', path, value: { ...edit.value } });
  const after = edit.value;
  const oldKeys = Object.keys(before);
  for (let i = oldKeys.length - 1; i >= 0; i--) {
    const key = oldKeys[i]!;
    if (before[key] !== after[key])
      out.push({ op: 'replace', path: `${path}/${escapePointer(key)}`, value: after[key] });
  }
  const newKeys = Object.keys(after);
  if (newKeys.length === oldKeys.length) return;
  for (const key of newKeys)
    if (!has(before, key)) out.push({ op: 'add', path: `${path}/${escapePointer(key)}`, value: after[key] });
}

/**
 * The patch that turns `metadata` (the request object's, or absent) into it with `edits` applied, given
 * in the order the mutation made them. Fields not edited are never touched.
 */
export function metadataPatch(
  metadata: unknown,
  edits: ReadonlyArray<readonly [field: string, edit: FieldEdit]>,
): PatchOperation[] {
  const out: PatchOperation[] = [];
  if (edits.length === 0) return out;
  if (!isRecord(metadata)) {
    const whole: Record<string, unknown> = {};
    for (const [field, edit] of edits) whole[field] = edit.kind === 'map' ? { ...edit.value } : edit.value;
    out.push({ op: 'add', path: '/metadata', value: whole });
    return out;
  }
  const byField = new Map(edits);
  const oldKeys = Object.keys(metadata);
  for (let i = oldKeys.length - 1; i >= 0; i--) {
    const field = oldKeys[i]!;
    const edit = byField.get(field);
    if (edit) fieldOps(`/metadata/${escapePointer(field)}`, metadata[field], edit, out);
  }
  for (const [field, edit] of edits) {
    if (!has(metadata, field))
      out.push({
        op: 'add',
        path: `/metadata/${escapePointer(field)}`,
        value: edit.kind === 'map' ? { ...edit.value } : edit.value,
      });
  }
  return out;
}
