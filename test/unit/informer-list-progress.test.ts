/**
 * The informers' list timeout counts progress (a page), not the whole list: a long paged list from a
 * busy apiserver completes (P3: 50,000 namespaces took ≈ 60 s under load and were restarted from
 * scratch again and again), a hung one still fails, and an abandoned one stops at its next page.
 */
import { describe, expect, it } from 'vitest';
import { withProgressTimeout } from '../../src/kube/informers.js';
import { listInPages } from '../../src/kube/lists.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A paged "apiserver": `pages` pages of one namespace each, `delayMs` apart; counts the pages it served. */
function pagedServer(pages: number, delayMs: (page: number) => number) {
  const served = { count: 0 };
  const fetchPage = async ({ _continue }: { limit: number; _continue?: string }) => {
    const n = _continue ? Number(_continue) : 0;
    await sleep(delayMs(n));
    served.count += 1;
    return {
      metadata: { resourceVersion: '7', ...(n + 1 < pages ? { _continue: String(n + 1) } : {}) },
      items: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: `ns${n}`, managedFields: [{}] } }],
    };
  };
  return { served, fetchPage };
}

describe('list progress timeout', () => {
  it('lets a paged list that takes longer than the timeout in all, but pages steadily, complete', async () => {
    const { fetchPage } = pagedServer(12, () => 20);
    const list = await withProgressTimeout(
      (onPage) => listInPages('v1', 'NamespaceList', fetchPage, onPage),
      100,
      'list Namespace',
    );
    expect(list.items).toHaveLength(12);
    expect(list.metadata?.resourceVersion).toBe('7');
    expect(list.items[0]!.metadata).toEqual({ name: 'ns0' });
  });

  it('fails a list whose next page does not come, and the abandoned list fetches no further page', async () => {
    const { served, fetchPage } = pagedServer(10, (n) => (n === 3 ? 150 : 5));
    await expect(
      withProgressTimeout((onPage) => listInPages('v1', 'NamespaceList', fetchPage, onPage), 60, 'list Namespace'),
    ).rejects.toThrow('list Namespace made no progress for 60 ms');
    await sleep(250);
    // Pages 0–3 were served (the fourth late); the list stopped there instead of fetching 4–9.
    expect(served.count).toBe(4);
  });

  it('times a list that reports no progress as a whole', async () => {
    await expect(withProgressTimeout(() => sleep(100).then(() => 'late'), 30, 'list RoleBinding')).rejects.toThrow(
      'made no progress for 30 ms',
    );
    await expect(withProgressTimeout(() => sleep(5).then(() => 'ok'), 100, 'list RoleBinding')).resolves.toBe('ok');
  });
});
