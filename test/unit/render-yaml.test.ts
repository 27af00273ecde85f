/**
 * The fast YAML paths of render (SPEC §10 P2) against the `yaml` library they stand in for:
 * - src/render/yaml-emit.ts must print exactly what `stringify(v, { lineWidth: 0 })` prints, or give up;
 * - src/validate/yaml-fast.ts must read exactly what `parseAllDocuments(text)` + `toJS()` reads
 *   (same documents, same values), or give up — never accept what the library rejects.
 * Differential property tests, plus a check that the real inputs take the fast paths.
 */
import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { renderDirectory } from '../../src/cli/render.js';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { renderProjects } from '../../src/render/render.js';
import { fastStringify, toYamlStream } from '../../src/render/yaml-emit.js';
import { parseSource } from '../../src/validate/source.js';
import type { Project } from '../../src/validate/types.js';
import { fastParseAll } from '../../src/validate/yaml-fast.js';

const ROOT = join(import.meta.dirname, '..', '..');
/** PROPERTY_RUNS_FACTOR=50 for a long differential run. */
const FACTOR = Number(process.env.PROPERTY_RUNS_FACTOR ?? 1);
const EXAMPLES = join(ROOT, 'examples');

/** Characters that matter to YAML's scalar rules. */
const TRICKY = [
  'a', 'b', 'x', 'e', 'E', 'n', 'u', 'l', 'T', 'r', '0', '1', '9', '.', '-', '+', '_', ' ', ' ', ':', '#', '?', ',', '[', ']', '{', '}',
  '&', '*', '!', '|', '>', "'", '"', '%', '@', '`', '~', '/', '\\', '\n', '\t', 'é', '€', '\u0085', '\u00a0', '\u2028', '\x7f', '\x01',
];
const WORDS = [
  '', 'null', 'Null', 'NULL', '~', 'true', 'True', 'FALSE', 'yes', 'no', 'on', 'off', '0', '-0', '+1', '007', '0o17', '0x1F', '0b101',
  '1e3', '1E-3', '.5', '5.', '1.5', '-.inf', '.NaN', '.nan', '1_000', '12:30', '2001-01-01', '---', '...', '--- x', '- x', '? x', ': x',
  'a: b', 'a #b', 'a#b', ' a', 'a ', 'a:', '-', '?', ':', '500m', '64Gi', '1.5', '"20"', "'x'", 'it\'s', 'say "hi"', '{x}', '[x]',
  'acme:payments-admins', 'alice@acme.example', '{project}-', 'tenantgate.io/project', '<<', '__proto__',
];

const trickyString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...WORDS) },
  { weight: 3, arbitrary: fc.string({ unit: fc.constantFrom(...TRICKY), maxLength: 8 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
);

const scalarValue = fc.oneof(
  trickyString,
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, 1e21, 1.5, -2, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, true, false, null),
);

const { tree } = fc.letrec<{ tree: unknown }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalarValue,
    fc.array(tie('tree'), { maxLength: 4 }),
    fc.dictionary(trickyString, tie('tree'), { maxKeys: 4 }),
    fc.dictionary(trickyString, fc.option(tie('tree'), { nil: undefined }), { maxKeys: 3 }),
  ),
}));

const topLevel = fc.oneof(fc.array(tree, { maxLength: 4 }), fc.dictionary(trickyString, tree, { maxKeys: 5 }));

function libraryStringify(value: unknown): string {
  return stringify(value, { lineWidth: 0 });
}

/** The library's reading: one entry per document, or undefined when it reports any error. */
function libraryRead(text: string): unknown[] | undefined {
  const docs = parseAllDocuments(text, { prettyErrors: false, uniqueKeys: true });
  const list = Array.isArray(docs) ? docs : [docs];
  if (list.some((d) => d.errors.length > 0)) return undefined;
  return list.map((d) => d.toJS({ maxAliasCount: 100 }) as unknown);
}

function expectSameReading(text: string): 'fast' | 'fallback' {
  const fast = fastParseAll(text);
  if (fast === undefined) return 'fallback';
  const lib = libraryRead(text);
  if (lib === undefined) throw new Error(`fast reader accepted text the library rejects:\n${text}`);
  if (!isDeepStrictEqual(fast, lib)) {
    throw new Error(`fast reader disagrees with the library on:\n${text}\nfast: ${JSON.stringify(fast)}\nlib:  ${JSON.stringify(lib)}`);
  }
  return 'fast';
}

function yamlFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.ya?ml$/.test(e.name))
    .map((e) => join(e.parentPath, e.name));
}

describe('fast emitter (src/render/yaml-emit.ts)', () => {
  it('prints exactly what yaml stringify prints, or gives up', () => {
    let fast = 0;
    fc.assert(
      fc.property(topLevel, (value) => {
        const mine = fastStringify(value);
        if (mine === undefined) return;
        fast++;
        expect(mine).toBe(libraryStringify(value));
      }),
      { numRuns: 3000 * FACTOR },
    );
    expect(fast).toBeGreaterThan(1000); // the property is not vacuous
  });

  it('gives up on shared references (the library prints anchors) and on class instances', () => {
    const shared = { a: 1 };
    expect(fastStringify({ x: shared, y: shared })).toBeUndefined();
    expect(libraryStringify({ x: shared, y: shared })).toContain('&');
    expect(fastStringify({ when: new Date(0) })).toBeUndefined();
    expect(fastStringify({ big: 1n })).toBeUndefined();
    expect(fastStringify({ text: 'two\nlines' })).toBeUndefined();
    expect(toYamlStream([{ x: shared, y: shared }, { text: 'two\nlines' }])).toBe(`---\n${libraryStringify({ x: shared, y: shared })}---\n${libraryStringify({ text: 'two\nlines' })}`);
  });

  it('keeps 0 and -0 apart, and prints special numbers as the library does', () => {
    for (const value of [{ a: 0, b: -0 }, { a: -0, b: 0 }, [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e21, 0.1]]) {
      expect(fastStringify(value)).toBe(libraryStringify(value));
    }
  });

  it('handles every object render emits for examples/gitops on the fast path', () => {
    const projects: Project[] = [];
    for (const file of yamlFilesUnder(join(EXAMPLES, 'gitops')).filter((f) => !f.endsWith('tenantgate.yaml'))) {
      for (const d of parseSource(file, readFileSync(file, 'utf8')).documents) projects.push(d.object as Project);
    }
    for (const cluster of ['', 'prod-eu', 'prod-us']) {
      for (const object of renderProjects(projects, DEFAULT_CONFIG, { cluster })) {
        const mine = fastStringify(object);
        expect(mine, `${object.kind} ${String(object.metadata.name)}`).toBeDefined();
        expect(mine).toBe(libraryStringify(object));
      }
    }
  });

  it('render output equals the library-printed stream', async () => {
    const result = await renderDirectory(join(EXAMPLES, 'gitops'), { ARGOCD_ENV_CLUSTER: 'prod-eu' });
    expect(result.errors).toEqual([]);
    const objects = libraryRead(result.output!)!.filter((o) => o !== null);
    expect(result.output).toBe(objects.map((o) => `---\n${libraryStringify(o)}`).join(''));
  });
});

describe('fast reader (src/validate/yaml-fast.ts)', () => {
  it('reads what the library reads from library-printed YAML in every style', () => {
    let fast = 0;
    const style = fc.record({
      collectionStyle: fc.constantFrom('any', 'block', 'flow'),
      defaultStringType: fc.constantFrom('PLAIN', 'QUOTE_DOUBLE', 'QUOTE_SINGLE'),
      defaultKeyType: fc.constantFrom(null, 'PLAIN', 'QUOTE_DOUBLE', 'QUOTE_SINGLE'),
      indentSeq: fc.boolean(),
      indent: fc.constantFrom(2, 4),
    });
    fc.assert(
      fc.property(fc.array(topLevel, { minLength: 1, maxLength: 3 }), style, fc.boolean(), (docs, options, leadingMarker) => {
        const texts = docs.map((d) => stringify(d, { lineWidth: 0, ...(options as object) }));
        const text = (leadingMarker ? '---\n' : '') + texts.join('---\n');
        if (expectSameReading(text) === 'fast') fast++;
      }),
      { numRuns: 3000 * FACTOR },
    );
    expect(fast).toBeGreaterThan(100);
  });

  it('takes the fast path for most library-printed block YAML with ordinary strings', () => {
    const word = fc.stringMatching(/^[a-z][a-z0-9.\/-]{0,10}$/);
    const ordinary = fc.oneof(word, fc.constantFrom('Payments team', 'acme:admins', '500m', '64Gi', '20', 'true', '1.5', ''), fc.integer(), fc.boolean());
    const { doc } = fc.letrec<{ doc: unknown }>((tie) => ({
      doc: fc.oneof({ depthSize: 'small' }, ordinary, fc.array(tie('doc'), { maxLength: 3 }), fc.dictionary(word, tie('doc'), { maxKeys: 4 })),
    }));
    let fast = 0;
    let runs = 0;
    fc.assert(
      fc.property(fc.dictionary(word, doc, { minKeys: 1, maxKeys: 5 }), fc.constantFrom('block', 'any'), (value, collectionStyle) => {
        runs++;
        if (expectSameReading(stringify(value, { lineWidth: 0, collectionStyle: collectionStyle as 'block' | 'any' })) === 'fast') fast++;
      }),
      { numRuns: 2000 * FACTOR },
    );
    expect(fast / runs).toBeGreaterThan(0.9);
  });

  it('never accepts what the library rejects, never reads it differently (random YAML-ish lines)', () => {
    const indent = fc.constantFrom('', '', '  ', '    ', ' ', '      ');
    const key = fc.constantFrom('a', 'b', 'name', 'a b', '"q"', "'s'", '1', 'true', '~', 'x#y', '"a: b"', '-x', '<<', '__proto__', '{a: 1}', '? x', 'a');
    const value = fc.constantFrom(
      '', '1', '-2', '0x1F', '1e3', '.5', 'null', '""', "''", "'it''s'", '"x\\ny"', '"a', 'x y', '{a: 1, b: [x, y]}', '[1, 2]', '{}', '[]',
      '{a: 1,}', '[a: b]', '{a: {b: c}}', 'a #c', 'a#c', 'x:y', 'a: b', '&a x', '*a', '!t x', '|', '>', '- x', '? x', 'x]', 'x,y', '@x', '`x',
      '"q" x', '{a: 1} x', '{"a":1}', '{a:1}', '[x, {y: z}]', '{a: b, a: c}', '-1', '- ', '500m', '"20"', 'é', 'a\u00a0',
    );
    const line = fc.oneof(
      { weight: 6, arbitrary: fc.tuple(indent, key, value).map(([i, k, v]) => `${i}${k}:${v === '' ? '' : ` ${v}`}`) },
      { weight: 3, arbitrary: fc.tuple(indent, value).map(([i, v]) => `${i}-${v === '' ? '' : ` ${v}`}`) },
      { weight: 2, arbitrary: fc.tuple(indent, key, value).map(([i, k, v]) => `${i}- ${k}:${v === '' ? '' : ` ${v}`}`) },
      { weight: 1, arbitrary: fc.tuple(indent, value).map(([i, v]) => `${i}${v}`) },
      { weight: 1, arbitrary: fc.constantFrom('---', '--- # c', '...', '# comment', '', '  # c', '--- x', '%YAML 1.2', '- - a', '-  a', '\ta: 1', 'a: 1\r') },
    );
    let fast = 0;
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 8 }), fc.boolean(), (lines, trailingNewline) => {
        const text = lines.join('\n') + (trailingNewline ? '\n' : '');
        if (expectSameReading(text) === 'fast') fast++;
      }),
      { numRuns: 20000 * FACTOR },
    );
    expect(fast).toBeGreaterThan(200);
  });

  it('agrees with the library on mutated real declarations (typos, bad indentation, stray characters)', () => {
    const bases = yamlFilesUnder(EXAMPLES)
      .filter((f) => !f.includes('kustomization'))
      .map((f) => readFileSync(f, 'utf8'));
    const mutation = fc.oneof(
      fc.tuple(fc.constant('insert' as const), fc.nat(), fc.constantFrom(...TRICKY)),
      fc.tuple(fc.constant('delete' as const), fc.nat(), fc.constant('')),
      fc.tuple(fc.constant('indent' as const), fc.nat(), fc.constantFrom(' ', '  ', '-')),
      fc.tuple(fc.constant('dedent' as const), fc.nat(), fc.constant('')),
      fc.tuple(fc.constant('duplicate' as const), fc.nat(), fc.constant('')),
    );
    const apply = (text: string, [kind, at, ch]: [string, number, string]): string => {
      const lines = text.split('\n');
      const line = at % lines.length;
      switch (kind) {
        case 'insert': {
          const pos = at % (text.length + 1);
          return text.slice(0, pos) + ch + text.slice(pos);
        }
        case 'delete': {
          const pos = at % Math.max(text.length, 1);
          return text.slice(0, pos) + text.slice(pos + 1);
        }
        case 'indent':
          lines[line] = ch + lines[line];
          return lines.join('\n');
        case 'dedent':
          lines[line] = lines[line]!.replace(/^ /, '');
          return lines.join('\n');
        default:
          lines.splice(line, 0, lines[line]!);
          return lines.join('\n');
      }
    };
    let fast = 0;
    fc.assert(
      fc.property(fc.constantFrom(...bases), fc.array(mutation, { minLength: 1, maxLength: 3 }), (base, mutations) => {
        const text = mutations.reduce(apply, base);
        if (expectSameReading(text) === 'fast') fast++;
      }),
      { numRuns: 5000 * FACTOR },
    );
    expect(fast).toBeGreaterThan(1000);
  });

  it('counts documents as the library does (empty ones included)', () => {
    for (const text of ['', '# c\n', '---\n', 'a: 1\n---\n', 'a: 1\n---', '# c\n---\na: 1', '---\n# c\n---\na: 1\n', 'a: 1\n---\n---\nb: 2\n', 'a: 1\n--- # x\nb: 2']) {
      expect(expectSameReading(text), JSON.stringify(text)).toBe('fast');
    }
  });

  it('reads every example declaration on the fast path, identically', () => {
    const files = yamlFilesUnder(EXAMPLES).filter((f) => !f.includes('kustomization'));
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) {
      expect(expectSameReading(readFileSync(file, 'utf8')), file).toBe('fast');
    }
  });

  it('still reports positions for findings when the fast path read the file', () => {
    const text = '# c\napiVersion: v1\nkind: X\nmetadata:\n  name: a\n---\nmetadata:\n  labels: {a: b}\n';
    const { documents } = parseSource('f.yaml', text);
    expect(documents.map((d) => d.index)).toEqual([0, 1]);
    expect(documents[1]!.lineCounter.linePos(documents[1]!.document.contents!.range![0])).toEqual({ line: 7, col: 1 });
  });
});
