/** YAML sources with positions: text → documents, and field paths → file:line:col. No I/O. */
import { isMap, isSeq, LineCounter, parseAllDocuments, type Document, type Node } from 'yaml';
import { API_VERSION, PROJECT_KIND, type FieldPath, type Project, type Violation } from './types.js';

export interface SourceDocument {
  file: string;
  /** Index of the document in its file. */
  index: number;
  document: Document.Parsed;
  lineCounter: LineCounter;
  object: unknown;
}

export interface ParseProblem {
  file: string;
  line: number;
  col: number;
  message: string;
}

export function parseSource(file: string, text: string): { documents: SourceDocument[]; problems: ParseProblem[] } {
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

export function isProjectObject(object: unknown): object is Project {
  if (typeof object !== 'object' || object === null) return false;
  const o = object as Record<string, unknown>;
  return o.kind === PROJECT_KIND && typeof o.apiVersion === 'string' && o.apiVersion.startsWith('tenantgate.io/');
}

export function isWrongVersionProject(object: unknown): boolean {
  return isProjectObject(object) && (object as Project).apiVersion !== API_VERSION;
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

export function formatViolation(source: SourceDocument, v: Violation): string {
  const { line, col } = positionOf(source, v.path);
  return `${source.file}:${line}:${col}: [${v.rule}] ${v.message}`;
}
