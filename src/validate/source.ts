/** YAML sources with positions: text → documents, and field paths → file:line:col. No I/O. */
import { isMap, isSeq, LineCounter, parseAllDocuments, type Document, type Node } from 'yaml';
import { CORE_SCHEMA, loadAll } from 'js-yaml';
import { PROJECT_KIND, type FieldPath, type Project } from './types.js';

export interface SourceDocument {
  file: string;
  /** Index of the document in its file. */
  index: number;
  /** The document with positions. Parsed on first use when the fast reader gave `object`. */
  readonly document: Document.Parsed;
  readonly lineCounter: LineCounter;
  object: unknown;
}

export interface ParseProblem {
  file: string;
  line: number;
  col: number;
  message: string;
}

export function parseSource(file: string, text: string): { documents: SourceDocument[]; problems: ParseProblem[] } {
  // Render speed (P2, docs/benchmarks.md): js-yaml reads plain declarations several times faster than the `yaml`
  // library's document model. Positions are needed only for findings, so the library parses a file (with
  // positions) only when a finding asks for them — or when js-yaml refuses the text, so that YAML
  // errors are reported by the one parser that gives their positions.
  const fast = readFast(text);
  if (fast) {
    let full: { documents: Document.Parsed[]; lineCounter: LineCounter } | undefined;
    const withPositions = () => {
      if (!full) {
        const lineCounter = new LineCounter();
        const docs = parseAllDocuments(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
        full = { documents: Array.isArray(docs) ? docs : [docs], lineCounter };
      }
      return full;
    };
    const documents: SourceDocument[] = [];
    fast.forEach((object, index) => {
      if (object === null || object === undefined) return;
      documents.push({
        file,
        index,
        object,
        get document() {
          return withPositions().documents[index]!;
        },
        get lineCounter() {
          return withPositions().lineCounter;
        },
      });
    });
    return { documents, problems: [] };
  }
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const documents: SourceDocument[] = [];
  const problems: ParseProblem[] = [];
  const list = Array.isArray(docs) ? docs : [docs];
  list.forEach((document, index) => {
    for (const error of document.errors) {
      const pos = lineCounter.linePos(error.pos[0]);
      problems.push({ file, line: pos.line, col: pos.col, message: `YAML: ${error.message.split('\n')[0]}` });
    }
    if (document.errors.length) return;
    const object = document.toJS({ maxAliasCount: 100 }) as unknown;
    if (object === null || object === undefined) return;
    documents.push({ file, index, document, lineCounter, object });
  });
  return { documents, problems };
}

/** All documents of the text, or undefined when js-yaml refuses it (the library then reports why). */
function readFast(text: string): unknown[] | undefined {
  try {
    return loadAll(text, { schema: CORE_SCHEMA });
  } catch {
    return undefined;
  }
}

export function isProjectObject(object: unknown): object is Project {
  if (typeof object !== 'object' || object === null) return false;
  const o = object as Record<string, unknown>;
  return o.kind === PROJECT_KIND && typeof o.apiVersion === 'string' && o.apiVersion.startsWith('tenantgate.io/');
}

/** The deepest existing node on `path` (a missing field points at its parent). */
export function positionOf(source: SourceDocument, path: FieldPath = []): { line: number; col: number } {
  let node: Node | null = source.document.contents as Node | null;
  let offset = node?.range?.[0] ?? 0;
  for (const key of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => {
        const k = p.key as { value?: unknown } | null;
        return k !== null && typeof k === 'object' && String(k.value) === String(key);
      });
      if (!pair) break;
      const value = pair.value as Node | null;
      const keyNode = pair.key as Node | null;
      node = value;
      offset = value?.range?.[0] ?? keyNode?.range?.[0] ?? offset;
    } else if (isSeq(node) && typeof key === 'number') {
      const item = node.items[key] as Node | undefined;
      if (!item) break;
      node = item;
      offset = item.range?.[0] ?? offset;
    } else {
      break;
    }
  }
  const pos = source.lineCounter.linePos(offset);
  return { line: pos.line, col: pos.col };
}
