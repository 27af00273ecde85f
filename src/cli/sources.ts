/** Reads Project declarations from files and directories (the I/O edge of validate/render). */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { parseSource, type ParseProblem, type SourceDocument } from '../validate/source.js';

const YAML = /\.ya?ml$/i;
const SKIP_DIRS = new Set(['.git', 'node_modules']);

export async function yamlFiles(paths: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const path of paths) {
    const info = await stat(path);
    if (info.isDirectory()) {
      const entries = (await readdir(path, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
      for (const entry of entries) {
        if (entry.isDirectory() && !SKIP_DIRS.has(entry.name)) out.push(...(await yamlFiles([join(path, entry.name)])));
        else if (
          entry.isFile() &&
          YAML.test(entry.name) &&
          entry.name !== 'tenantgate.yaml' &&
          !entry.name.startsWith('kustomization.')
        )
          out.push(join(path, entry.name));
      }
    } else {
      out.push(path);
    }
  }
  return out;
}

export async function readSources(
  paths: string[],
  base = process.cwd(),
): Promise<{ documents: SourceDocument[]; problems: ParseProblem[] }> {
  const documents: SourceDocument[] = [];
  const problems: ParseProblem[] = [];
  for (const file of await yamlFiles(paths)) {
    const shown = relative(base, file) || file;
    const parsed = parseSource(shown.startsWith('..') ? file : shown, await readFile(file, 'utf8'));
    documents.push(...parsed.documents);
    problems.push(...parsed.problems);
  }
  return { documents, problems };
}
