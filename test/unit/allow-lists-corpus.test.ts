/**
 * The allow-list corpus (test/support/allow-lists-corpus.ts) through the offline form: each case's verdict
 * from `allowListViolations` is the one written by hand in the corpus. The same corpus goes through the API
 * server's policies in test/e2e/allow-lists-differential.test.ts; this file is its fast half, with the
 * updates the API server's validation refuses before admission (immutable fields) as well.
 */
import { describe, expect, it } from 'vitest';
import {
  allowListCorpus,
  CORPUS_RULES,
  OFFLINE_NAMES,
  offlineVerdict,
  ruleOfCase,
} from '../support/allow-lists-corpus.js';

const corpus = allowListCorpus(OFFLINE_NAMES);

describe('the allow-list corpus', () => {
  it('has unique ids, each case about a rule of the ADR', () => {
    const ids = corpus.map((c) => `${c.project}/${c.kind}/${c.id}`);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    for (const c of corpus) expect(CORPUS_RULES).toContain(ruleOfCase(c));
  });

  it('refuses and admits every rule on CREATE and on UPDATE', () => {
    const missing: string[] = [];
    for (const rule of CORPUS_RULES) {
      for (const operation of ['CREATE', 'UPDATE'] as const) {
        const of = corpus.filter((c) => ruleOfCase(c) === rule && (c.old !== undefined) === (operation === 'UPDATE'));
        if (!of.some((c) => c.expected === rule)) missing.push(`${rule} ${operation} refused`);
        if (!of.some((c) => c.expected === 'admitted')) missing.push(`${rule} ${operation} admitted`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('gets from the offline form the verdict written in each case', () => {
    const wrong = corpus
      .map((c) => ({ c, got: offlineVerdict(OFFLINE_NAMES, c) }))
      .filter(({ c, got }) => got !== c.expected)
      .map(
        ({ c, got }) =>
          `${c.project} ${c.kind} ${c.id} (${c.old ? 'UPDATE' : 'CREATE'}, ${c.what}): ` +
          `expected ${c.expected}, offline ${got}`,
      );
    expect(wrong, `${wrong.length} of ${corpus.length} cases`).toEqual([]);
  });
});
