/**
 * A fleet hub in memory for unit tests (the HubClient interface of src/fleet/hub-client.ts, as
 * test/support/memory-ledger.ts is for the headroom ledger): one FleetBudget per project with a
 * version checked on every status write (compare-and-swap); `loseNext` drops the answer of the next
 * write after or before it lands, `down` makes every call fail as a connection would.
 */
import { HubConflict, type HubClient } from '../../src/fleet/hub-client.js';
import { parseFleetBudget, type FleetBudgetObject } from '../../src/fleet/fleet-budget-object.js';

export class MemoryHub implements HubClient {
  readonly objects = new Map<string, FleetBudgetObject>();
  private version = 1;
  writes = 0;
  reads = 0;
  loseNext: 'after' | 'before' | undefined;
  /** Called before each write is judged (a rival member writing meanwhile). */
  beforeWrite?: () => void;
  down = false;

  put(object: FleetBudgetObject): void {
    this.objects.set(object.metadata.name!, {
      ...structuredClone(object),
      metadata: { ...object.metadata, resourceVersion: String(++this.version) },
    });
  }
  async read(name: string): Promise<FleetBudgetObject | undefined> {
    if (this.down) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    this.reads += 1;
    const o = this.objects.get(name);
    return o ? structuredClone(o) : undefined;
  }
  async writeStatus(object: FleetBudgetObject): Promise<FleetBudgetObject> {
    if (this.down) throw new Error('connect ECONNREFUSED');
    this.beforeWrite?.();
    const lose = this.loseNext;
    this.loseNext = undefined;
    if (lose === 'before') throw new Error('socket hang up');
    const name = object.metadata.name!;
    const current = this.objects.get(name)!;
    if (current.metadata.resourceVersion !== object.metadata.resourceVersion) throw new HubConflict(name);
    this.writes += 1;
    this.put({ ...current, status: object.status });
    if (lose === 'after') throw new Error('socket hang up');
    return structuredClone(this.objects.get(name)!);
  }
  /** Heartbeats renewed: cluster → the last renewal's time. */
  readonly heartbeats = new Map<string, Date>();
  async renewHeartbeat(cluster: string, at: Date): Promise<void> {
    if (this.down) throw new Error('connect ECONNREFUSED');
    this.heartbeats.set(cluster, at);
  }
  close(): void {}
  ledger(name = 'web') {
    const parsed = parseFleetBudget(this.objects.get(name)!);
    if (!parsed.ok) throw new Error(parsed.problems.join('; '));
    return parsed.record;
  }
}
