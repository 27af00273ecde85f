/** docs/rules.md and src/validate/rules/ describe the same rules: every id has a section and a `code:` line naming real exports. */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const doc = readFileSync(join(ROOT, 'docs', 'rules.md'), 'utf8');

/** Rule id → its `code:` line, from the sections headed `### <id> — …`. */
function codeLines(): Map<string, string> {
  const out = new Map<string, string>();
  for (const section of doc.split(/^### /m).slice(1)) {
    const id = /^(\w\d+) — /.exec(section)?.[1];
    const code = /^code: (.*)$/m.exec(section)?.[1];
    if (id) out.set(id, code ?? '');
  }
  return out;
}

function ruleIds(): string[] {
  const types = readFileSync(join(ROOT, 'src', 'validate', 'types.ts'), 'utf8');
  const union = /export type RuleId =([^;]*);/.exec(types)?.[1] ?? '';
  return [...union.matchAll(/'(\w\d+)'/g)].map((m) => m[1]!);
}

describe('docs/rules.md', () => {
  it('has a section with a code: line for every rule id', () => {
    const lines = codeLines();
    const ids = ruleIds();
    expect(ids.length).toBeGreaterThan(10);
    for (const id of ids) expect(lines.get(id), `docs/rules.md: no code: line for ${id}`).toBeTruthy();
  });

  it('names only functions the named files export', () => {
    for (const [id, line] of codeLines()) {
      // `path` — `fn`, `fn`  …  or  `path` (`fn`): every path is a file, every other backticked word an export of the path before it.
      let file: string | undefined;
      for (const [, token] of line.matchAll(/`([^`]+)`/g)) {
        if (token!.includes('/')) {
          file = readFileSync(join(ROOT, token!), 'utf8');
          continue;
        }
        expect(file, `${id}: ${token} has no file before it`).toBeDefined();
        expect(file!, `${id}: ${token} is not exported where docs/rules.md says`).toMatch(
          new RegExp(`export (async )?(function|const|class) ${token}\\b`),
        );
      }
    }
  });
});

describe('src/validate', () => {
  // policies/ holds the API server's form of the allow-list rules (their CEL and messages), kept equal to
  // rules/ by test/e2e/allow-lists-differential.test.ts.
  it('writes rule ids only in rules/, the schema check and the admission policies', () => {
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) {
          if (entry.name !== 'rules' && entry.name !== 'schema' && entry.name !== 'policies') walk(path);
        } else if (entry.name.endsWith('.ts') && /\brule: '(?!S1')[A-Z]\d/.test(readFileSync(path, 'utf8'))) {
          offenders.push(path.slice(ROOT.length + 1));
        }
      }
    };
    walk(join(ROOT, 'src'));
    expect(offenders).toEqual([]);
  });
});
