/**
 * The docs are walked by following links: every relative Markdown link in README.md, CHANGELOG.md and
 * docs/ (ADRs and history included) points at a file or directory of the repository, and every
 * `#anchor` into a Markdown file names one of its headings. The current docs (docs/*.md and docs/adr/*.md,
 * not the history) name source files in backticks, `src/…`; every such path exists.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return markdownFiles(path);
    return e.name.endsWith('.md') ? [path] : [];
  });
}

/** Headings as GitHub turns them into anchors: lowercase, punctuation dropped, spaces to hyphens. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    let unique = slug;
    for (let n = 1; anchors.has(unique); n++) unique = `${slug}-${n}`;
    anchors.add(unique);
  }
  return anchors;
}

/** Relative link targets outside code: `[text](target)`, without external URLs and mail addresses. */
export function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1]!)
    .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

/** Backticked repository paths under src/ outside fenced code: `src/a/b.ts`, `src/a/` (no globs). */
export function sourcePaths(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '');
  return [...prose.matchAll(/`(src\/[^`\s*]*)`/g)].map((m) => m[1]!);
}

const FILES = [join(ROOT, 'README.md'), join(ROOT, 'CHANGELOG.md'), ...markdownFiles(join(ROOT, 'docs'))].filter((f) =>
  existsSync(f),
);

describe('links between the docs', () => {
  it('finds the Markdown of README.md and docs/', () => {
    expect(FILES.length).toBeGreaterThan(20);
    expect(relativeLinks('[a](b.md) `[c](d.md)` [e](https://x.example) [f](g.md#h)')).toEqual(['b.md', 'g.md#h']);
    expect([...anchorsOf('# Title\n## What `make run` does\n```\n# not a heading\n```\n## Title')]).toEqual([
      'title',
      'what-make-run-does',
      'title-1',
    ]);
  });

  it('every relative link resolves to a file of the repository, and every anchor to a heading', () => {
    const broken: string[] = [];
    for (const file of FILES) {
      for (const target of relativeLinks(readFileSync(file, 'utf8'))) {
        const [path, anchor] = target.split('#', 2) as [string, string | undefined];
        const resolved = path === '' ? file : resolve(dirname(file), decodeURI(path));
        const where = `${relative(ROOT, file)}: ${target}`;
        if (!existsSync(resolved)) broken.push(`${where} (no ${relative(ROOT, resolved)})`);
        else if (
          anchor &&
          statSync(resolved).isFile() &&
          resolved.endsWith('.md') &&
          !anchorsOf(readFileSync(resolved, 'utf8')).has(anchor)
        )
          broken.push(`${where} (no heading #${anchor})`);
      }
    }
    expect(broken).toEqual([]);
  });
});

/** The docs that describe the system as it is: docs/*.md and docs/adr/*.md (history/ keeps its text as written). */
const CURRENT_DOCS = [join(ROOT, 'docs'), join(ROOT, 'docs', 'adr')].flatMap((dir) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(dir, f)),
);

describe('source paths named by the current docs', () => {
  it('finds backticked src/ paths, and none inside fenced code', () => {
    expect(CURRENT_DOCS.length).toBeGreaterThan(20);
    expect(CURRENT_DOCS.some((f) => f.includes(`${join('adr', 'history')}`))).toBe(false);
    expect(sourcePaths('`src/a.ts` and `src/b/` `src/*.ts` `x/src/c.ts`\n```\n`src/d.ts`\n```')).toEqual([
      'src/a.ts',
      'src/b/',
    ]);
  });

  it('every backticked src/ path in docs/*.md and docs/adr/*.md exists', () => {
    const missing: string[] = [];
    for (const file of CURRENT_DOCS) {
      for (const path of sourcePaths(readFileSync(file, 'utf8'))) {
        if (!existsSync(join(ROOT, path))) missing.push(`${relative(ROOT, file)}: ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
