/**
 * The webhook's side of fleet budgets (docs/adr/0039-fleet-budgets.md): a growth of a
 * fleet-budgeted Project beyond this member's enforced limit E asks the hub for the room (need + keep)
 * within the decision's deadline, raises E once the hub stored the grant, and lets the headroom guard
 * decide again against the new E; a refusal or a hub that does not answer denies with F2. Growth
 * within E never reaches this module.
 *
 * The headroom guard (src/webhook/headroom.ts) calls it inside the project's turn, so one replica
 * moves room for a project at a time; across replicas the ledger's CAS on E serialises them.
 */
import { randomBytes } from 'node:crypto';
import { describeError } from '../../kube/errors.js';
import { raiseEnforced } from '../../fleet/enforced-limit.js';
import { decodeRecord } from '../../fleet/enforced-record.js';
import type { HubClient } from '../../fleet/hub-client.js';
import { applyOnHub, surelyGranted, type HubTransactionOptions } from '../../fleet/hub-transaction.js';
import { decideLocally, growthWant, type GiveBackPolicy } from '../../fleet/member.js';
import { requestGrowth, type Granted, type ShareRecord } from '../../fleet/shares.js';
import {
  fleetBudgetUnusable,
  fleetGrowthRefusal,
  fleetHubRejected,
  fleetHubUnreachable,
  fleetRaiseFailed,
} from '../../validate/rules/fleet.js';
import type { Resources } from '../../validate/types.js';
import type { Violation } from '../../validate/types.js';
import type { LedgerStore } from '../../ledger/ledger.js';

type TransferResult = 'granted' | 'refused' | 'rejected' | 'unreachable' | 'unusable' | 'failed';

export interface FleetGuardOptions {
  /** This cluster's name (tenantgate.yaml clusterName), a member in the Projects' spec.fleet.clusters. */
  cluster: string;
  hub: HubClient;
  /** keep: asked beyond a growth's need, so the next growths fit without a hub write. */
  policy: GiveBackPolicy;
  /** A fresh idempotency key per transfer (default: `<cluster>-<random>`). */
  newKey?: () => string;
  /**
   * Time left to raise E and write the reservation after the hub answered (default 400 ms): the hub
   * gets the decision's deadline minus this, so a slow hub ends in F2, not in Q5's timeout.
   */
  marginMs?: number;
  maxAttempts?: number;
  now?: () => number;
  onTransfer?: (result: TransferResult) => void;
  onHubCall?: HubTransactionOptions['onCall'];
  /** After E of a project changed (raised here) or was read: for the enforced-limit gauge. */
  onEnforced?: (project: string, enforced: Resources) => void;
  log?: (message: string) => void;
}

export type Transfer =
  /** E was raised: decide again. */
  { readonly ok: true } | { readonly ok: false; readonly violation: Violation };

/** The part of a growth beyond E (`after`: the project's allocation after the change, per fleet-budgeted resource). */
export function needBeyond(enforced: Resources, after: Resources): Resources | undefined {
  const local = decideLocally(enforced, after);
  return local.fits ? undefined : local.need;
}

export class FleetGrowth {
  /** The ledger each project's hub read last showed, to name who held the room when the hub is down. */
  private readonly lastRead = new Map<string, ShareRecord>();

  constructor(
    readonly options: FleetGuardOptions,
    private readonly ledger: LedgerStore,
  ) {}

  get cluster(): string {
    return this.options.cluster;
  }

  private newKey(): string {
    return this.options.newKey?.() ?? `${this.options.cluster}-${randomBytes(6).toString('hex')}`;
  }

  /**
   * Ask the hub for `need` (and up to need + keep) of `project`'s fleet budget; once it stored the
   * grant, raise E by what it surely granted. `enforced` is the E the growth was judged against.
   * `dryRun`: read the hub and say whether it would grant, write nothing.
   */
  async request(
    project: string,
    need: Resources,
    enforced: Resources,
    leftMs: number,
    dryRun: boolean,
    signal?: AbortSignal,
  ): Promise<Transfer> {
    const o = this.options;
    const margin = o.marginMs ?? 400;
    const deadlineMs = Math.max(0, leftMs - margin);
    const key = this.newKey();
    const want = growthWant(need, o.policy);
    const transition = (l: ShareRecord) => requestGrowth(l, o.cluster, { id: key, need, want });
    const deny = (result: TransferResult, violation: Violation): Transfer => {
      o.onTransfer?.(result);
      o.log?.(`fleet: project ${project}: ${violation.message}`);
      return { ok: false, violation };
    };
    const seconds = Math.round(deadlineMs / 100) / 10;
    const base = {
      member: o.cluster,
      key,
      deadlineMs,
      ...(o.maxAttempts ? { maxAttempts: o.maxAttempts } : {}),
      ...(o.now ? { now: o.now } : {}),
      ...(signal ? { signal } : {}),
      ...(o.onHubCall ? { onCall: o.onHubCall } : {}),
    };
    // E's generation before the hub write: if the controller lowers E meanwhile (a give-back racing this
    // growth), the grant is not added to E (it may have been given back with the rest).
    let generation: number | undefined;
    if (!dryRun) {
      const before = decodeRecord((await this.ledger.read(project)).fleet, project);
      if (before.ok) generation = before.record.generation;
    }
    // A dry run writes nothing: it only asks whether the hub would grant.
    const outcome = await applyOnHub(o.hub, project, transition, { ...base, dryRun });
    if (outcome.kind === 'refused') {
      this.lastRead.set(project, outcome.record);
      return deny('refused', fleetGrowthRefusal(project, o.cluster, outcome.refusal));
    }
    if (outcome.kind === 'unusable') return deny('unusable', fleetBudgetUnusable(project, o.cluster, outcome.problems));
    if (outcome.kind === 'rejected') {
      this.lastRead.set(project, outcome.record);
      return deny('rejected', fleetHubRejected(project, o.cluster, outcome.problems.join('; ')));
    }
    if (outcome.kind === 'unreachable') {
      if (outcome.lastRead) this.lastRead.set(project, outcome.lastRead);
      o.log?.(`fleet: project ${project}: the hub did not answer: ${outcome.reason}`);
      return deny(
        'unreachable',
        fleetHubUnreachable(
          project,
          o.cluster,
          need,
          enforced,
          seconds,
          outcome.lastRead ?? this.lastRead.get(project),
        ),
      );
    }
    this.lastRead.set(project, outcome.record);
    if (dryRun) return { ok: true };
    const granted = surelyGranted(outcome.results as readonly Granted[]);
    try {
      const raised = await raiseEnforced(
        this.ledger,
        project,
        key,
        granted,
        generation !== undefined ? { ifGeneration: generation } : {},
      );
      o.onEnforced?.(project, raised.record.enforced);
      if (!raised.applied)
        return deny(
          'failed',
          fleetRaiseFailed(
            project,
            o.cluster,
            granted,
            "the member's controller lowered the enforced limit while the hub granted this: a give-back raced " +
              'the growth, and the grant goes back to the pool with the next one',
          ),
        );
    } catch (err) {
      // The hub holds the grant; E stays lower (the share is only unused until the next give-back).
      return deny('failed', fleetRaiseFailed(project, o.cluster, granted, describeError(err)));
    }
    o.onTransfer?.('granted');
    o.log?.(
      `fleet: project ${project}: the hub granted ` +
        `${[...granted].map(([r, q]) => `${r} ${q.toString()}`).join(', ')} (key ${key}, ${outcome.confirmedBy})`,
    );
    return { ok: true };
  }
}
