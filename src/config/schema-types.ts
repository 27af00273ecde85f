/**
 * A tenantgate.yaml option is declared once, in the JSON Schema of schema.ts: its range, its default
 * (the `default` keyword) and, from both, its TypeScript type (`Resolved`) and its value once the
 * defaults are filled in (`withSchemaDefaults`). Covers the keywords schema.ts uses: type (one or a
 * list), enum, items, properties, additionalProperties, default. Pure.
 */

/** The part of a schema node the defaults walk reads. */
interface SchemaNode {
  readonly default?: unknown;
  readonly properties?: Readonly<Record<string, SchemaNode>>;
  readonly additionalProperties?: SchemaNode | boolean;
}

type Primitive<T> = T extends 'string'
  ? string
  : T extends 'boolean'
    ? boolean
    : T extends 'number' | 'integer'
      ? number
      : never;

/** The keys of `P` whose schema has a default, and the `required` ones: present once the defaults are filled in. */
type Present<P, S> =
  | { [K in keyof P]: P[K] extends { readonly default: unknown } ? K : never }[keyof P]
  | (S extends { readonly required: readonly (infer R)[] } ? Extract<R, keyof P> : never);

type Flat<T> = { [K in keyof T]: T[K] };

type ResolvedObject<P, S> = Flat<
  { -readonly [K in Present<P, S>]: Resolved<P[K]> } & {
    -readonly [K in Exclude<keyof P, Present<P, S>>]?: Resolved<P[K]>;
  }
>;

/**
 * The type of a value schema `S` admits with its defaults filled in: a property whose schema has a
 * `default`, or that its mapping lists as `required`, is always there; the others are optional.
 */
export type Resolved<S> = S extends { readonly enum: readonly (infer E)[] }
  ? E
  : S extends { readonly type: 'array'; readonly items: infer I }
    ? Resolved<I>[]
    : S extends { readonly type: 'object'; readonly properties: infer P }
      ? ResolvedObject<P, S>
      : S extends { readonly type: 'object'; readonly additionalProperties: infer A }
        ? Record<string, Resolved<A>>
        : S extends { readonly type: readonly (infer T)[] }
          ? Primitive<T>
          : S extends { readonly type: infer T }
            ? Primitive<T>
            : unknown;

const isMapping = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `given` (valid against `schema`) with every default it leaves out filled in, at every depth: a key
 * absent or null takes its schema's `default` (a copy; a mapping's own defaults filled in too), a key
 * without a default stays absent. Given lists and scalars are kept as they are, never merged.
 */
export function withSchemaDefaults(given: unknown, schemaObject: object): unknown {
  const schema = schemaObject as SchemaNode;
  if (given === undefined || given === null)
    return schema.default === undefined ? undefined : withSchemaDefaults(structuredClone(schema.default), schema);
  if (!isMapping(given)) return given;
  if (schema.properties) {
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(schema.properties)) {
      const value = withSchemaDefaults(given[key], child);
      if (value !== undefined) out[key] = value;
    }
    return out;
  }
  const values = schema.additionalProperties;
  if (typeof values !== 'object') return given;
  return Object.fromEntries(Object.entries(given).map(([key, v]) => [key, withSchemaDefaults(v, values)]));
}
