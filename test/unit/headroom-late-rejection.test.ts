/**
 * A ledger call that fails after its decision's deadline has passed must not crash the webhook: the
 * guard stops waiting for it (the request is refused with [Q5]) but still handles its rejection. Found
 * by the shipped benchmark on a loaded machine, where a replica exited on an unhandled LedgerConflict.
 */
import { TEST_NOW } from '../support/instant.js';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config.js';
import { MemorySnapshot } from '../../src/validate/snapshot.js';
import { HeadroomGuard } from '../../src/webhook/headroom/guard.js';
import { LedgerConflict, type LedgerEntry, type LedgerState, type LedgerStore } from '../../src/ledger/ledger.js';
import { aQuotaCreateRequest } from '../support/fixtures.js';

const unhandled: unknown[] = [];
const record = (reason: unknown) => void unhandled.push(reason);

afterEach(() => {
  process.off('unhandledRejection', record);
  unhandled.length = 0;
});

/** A ledger whose read answers after the deadline has passed and whose write fails a little later. */
class LateLedger implements LedgerStore {
  writes = 0;
  constructor(private readonly clock: { t: number }) {}
  read(): Promise<LedgerState> {
    // The answer comes after the decision's deadline by the clock, before its timer has fired (a busy
    // event loop runs timers late): the guard still goes on to write.
    return new Promise((resolve) =>
      setTimeout(() => {
        this.clock.t += 10_000;
        resolve({ resourceVersion: '1', entries: [] });
      }, 5),
    );
  }
  write(project: string, _state: LedgerState, _entries: LedgerEntry[]): Promise<LedgerState> {
    this.writes += 1;
    return new Promise((_, reject) =>
      setTimeout(() => reject(new LedgerConflict(`ledger of project ${project} changed concurrently`)), 20),
    );
  }
  release(): Promise<void> {
    return Promise.resolve();
  }
}

describe('HeadroomGuard past its deadline', () => {
  it('refuses with [Q5] and handles the ledger write that fails afterwards', async () => {
    process.on('unhandledRejection', record);
    const clock = { t: 0 };
    const ledger = new LateLedger(clock);
    const guard = new HeadroomGuard({ ttlMs: 60_000, ledger, now: () => clock.t, deadlineMs: 2000 });
    const snapshot = MemorySnapshot.of({
      projects: [
        {
          metadata: { name: 'race', uid: 'u' },
          spec: {
            tenant: 'acme',
            owners: [{ kind: 'User', name: 'alice' }],
            quota: { hard: { 'requests.cpu': '10' } },
          },
        },
      ],
      namespaces: [
        { metadata: { name: 'race-n0', labels: { 'tenantgate.io/project': 'race', 'tenantgate.io/tenant': 'acme' } } },
      ],
    });
    const verdict = await guard.decide(
      { at: TEST_NOW, config: DEFAULT_CONFIG, snapshot, user: { username: 'alice', groups: [] } },
      aQuotaCreateRequest('race-n0'),
    );
    expect(verdict.violations.map((v) => v.rule)).toEqual(['Q5']);
    await new Promise((r) => setTimeout(r, 100));
    expect(ledger.writes).toBeGreaterThan(0);
    expect(unhandled).toEqual([]);
  });
});
