/**
 * bench/comparisons/peers/race.ts: the headroom race of bench/comparisons/peers, the same for every engine. Project `race` with
 * a requests.cpu budget of 10, 40 namespaces `race-n0`…`race-n39` (created as admin before any webhook
 * is registered), alice its owner. With one engine registered and enforcing the quota-headroom rule
 * (tenantgate: built in, Q1 with the ledger on; Kyverno: kyverno-q1-headroom.yaml; Gatekeeper:
 * gatekeeper-q1-headroom.yaml):
 *
 *  - in force: a dry-run create of budget + 1 CPU is denied by the headroom rule;
 *  - control: the 40 creates of 1 CPU one after another (what the rule admits without a race);
 *  - rounds: the 40 creates at once through the apiserver, as test/e2e/headroom-race.test.ts does;
 *    a round that admits more than 10 overspent the budget.
 *
 * Between rounds every quota is deleted and the bench waits until a dry-run create of the whole budget
 * is admitted again: the engine sees the headroom back (a cache has seen the deletions, a ledger has
 * released them), so no round starts with stale allocations in either direction.
 */
import { Agent } from 'node:https';
import type { Project } from '../../../src/validate/types.js';
import type { ControlPlane } from '../../../test/support/devcluster/controlplane.js';
import { applyAllowListParams, applyOwnerBindings, kubectlAs } from '../../../test/support/devcluster/tenantgate.js';
import { log } from '../../lib/measure.js';
import { createQuota, deleteQuotas } from './apiload.js';
import { eventually } from './engines.js';
import type { RowLoad } from './load.js';

const RACE_PROJECT = 'race';
export const RACE_NAMESPACES = Array.from({ length: 40 }, (_, i) => `race-n${i}`);
const RACE_BUDGET_CPU = 10;
/** A denial by the headroom rule: tenantgate says [Q1] (or [Q5] for a reservation it could not make), the peers' policies "Q1: …". */
const HEADROOM_DENIAL = /\bQ[15]\b/;

export interface RaceResult {
  engine: string;
  rounds: number;
  concurrent: number;
  budgetCpu: number;
  /** The 40 creates one at a time: what the rule admits without a race. */
  sequentialAdmitted: number;
  admittedPerRound: number[];
  overspentRounds: number;
  maxAdmitted: number;
  /** Creates denied by the headroom rule over all rounds. */
  deniedHeadroom: number;
  /** Answers that were neither 201 nor a headroom denial. */
  errors: number;
  firstError: string;
}

export type RaceRow = (RaceResult & { load: RowLoad }) | { engine: string; error: string; load?: RowLoad };

/** The race's Project and namespaces, as admin with no webhook registered. */
export async function setupRace(cp: ControlPlane): Promise<void> {
  const body = {
    apiVersion: 'tenantgate.io/v1alpha1',
    kind: 'Project',
    metadata: { name: RACE_PROJECT },
    spec: {
      tenant: 'acme',
      owners: [{ kind: 'User', name: 'alice' }],
      quota: { hard: { 'requests.cpu': String(RACE_BUDGET_CPU) } },
    },
  };
  await kubectlAs(cp.info, 'admin', ['apply', '-f', '-'], JSON.stringify(body));
  await kubectlAs(
    cp.info,
    'admin',
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: RACE_NAMESPACES.map((name) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels: { 'tenantgate.io/project': RACE_PROJECT, 'tenantgate.io/tenant': 'acme' } },
      })),
    }),
  );
  await applyOwnerBindings(cp.info, body as unknown as Project, RACE_NAMESPACES);
  // The allow-list policies' parameters, as the controller writes them: without them no pod is admitted (ADR 0095).
  await applyAllowListParams(cp.info, body as unknown as Project, RACE_NAMESPACES);
}

/** The race against whichever engine is registered now. */
export async function runRace(cp: ControlPlane, engine: string, rounds: number): Promise<RaceResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const budget = RACE_BUDGET_CPU;
  const probeNs = RACE_NAMESPACES[0]!;
  const clear = async () => {
    await Promise.all(RACE_NAMESPACES.map((ns) => deleteQuotas(cp, agent, ns)));
    await eventually(
      `${engine}: quotas cleared`,
      async () => {
        const left = (await kubectlAs(cp.info, 'admin', ['get', 'resourcequota', '-A', '--no-headers'])).stdout
          .split('\n')
          .filter((l) => l.startsWith('race-n')).length;
        if (left) throw new Error(`${left} quotas left`);
      },
      60_000,
      250,
    );
    await eventually(
      `${engine}: the whole budget fits again`,
      async () => {
        const a = await createQuota(cp, agent, 'alice', probeNs, 'probe-free', String(budget), true);
        if (a.status !== 201)
          throw new Error(`dry-run create of ${budget} CPU: ${a.status} ${a.message.slice(0, 200)}`);
      },
      120_000,
      250,
    );
  };
  try {
    await eventually(
      `${engine}: the headroom rule in force`,
      async () => {
        const a = await createQuota(cp, agent, 'alice', probeNs, 'probe-over', String(budget + 1), true);
        if (a.status === 201)
          throw new Error('a dry-run create over the budget was admitted: the rule is not in force yet');
        if (!HEADROOM_DENIAL.test(a.message))
          throw new Error(`denied, but not by the headroom rule: ${a.status} ${a.message.slice(0, 200)}`);
      },
      180_000,
      2000,
    );
    await clear();
    let sequentialAdmitted = 0;
    for (const ns of RACE_NAMESPACES)
      if ((await createQuota(cp, agent, 'alice', ns, 'seq', '1')).status === 201) sequentialAdmitted += 1;
    log(
      `peers: race, ${engine}: sequential control: ${sequentialAdmitted} of ${RACE_NAMESPACES.length} admitted (budget ${budget} × 1 CPU)`,
    );
    await clear();
    const admittedPerRound: number[] = [];
    let deniedHeadroom = 0;
    let errors = 0;
    let firstError = '';
    for (let i = 0; i < rounds; i++) {
      const answers = await Promise.all(RACE_NAMESPACES.map((ns) => createQuota(cp, agent, 'alice', ns, `r${i}`, '1')));
      admittedPerRound.push(answers.filter((a) => a.status === 201).length);
      for (const a of answers) {
        if (a.status === 201) continue;
        if (HEADROOM_DENIAL.test(a.message)) deniedHeadroom += 1;
        else {
          errors += 1;
          firstError ||= `${a.status} ${a.message}`.slice(0, 300);
        }
      }
      log(
        `peers: race, ${engine}: round ${i + 1}: ${admittedPerRound[i]} of ${RACE_NAMESPACES.length} admitted (budget ${budget} × 1 CPU)`,
      );
      await clear();
    }
    return {
      engine,
      rounds,
      concurrent: RACE_NAMESPACES.length,
      budgetCpu: budget,
      sequentialAdmitted,
      admittedPerRound,
      overspentRounds: admittedPerRound.filter((n) => n > budget).length,
      maxAdmitted: Math.max(...admittedPerRound),
      deniedHeadroom,
      errors,
      firstError,
    };
  } finally {
    // Nothing of this row may be left for the next engine's.
    await Promise.all(RACE_NAMESPACES.map((ns) => deleteQuotas(cp, agent, ns))).catch(() => {});
    agent.destroy();
  }
}
