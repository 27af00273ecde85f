/**
 * The measuring loop of an A/B comparison on one control plane: rounds of every arm, interleaved in one
 * run (arm A, arm B, arm A, …), so that a drift of the machine (other jobs, a warming JIT, a growing
 * etcd) falls on both arms alike. Per round and arm: the arm is switched on (`enter`), the API server's
 * idle CPU rate is measured for `idleSeconds` with nothing sent, then the load runs; what is reported
 * is the load's latencies, the API server's CPU above that idle rate, this process's CPU (the client,
 * and a webhook when it runs in this process), the wall time and the load average at start and end.
 * Used by bench/comparisons/namespace-labelling.ts and bench/comparisons/allow-lists.ts.
 */
import { loadavg } from 'node:os';
import { procCpuSeconds, sleep } from './measure.js';

export interface InterleavedOptions<Arm extends string, Load extends { latencies: number[] }> {
  /** The arms, in the order each round runs them. */
  arms: readonly Arm[];
  rounds: number;
  /** The kube-apiserver's pid (ControlPlane.pid). */
  apiserverPid: number;
  /** How long to measure the API server's idle rate before each load (seconds). */
  idleSeconds: number;
  /** Switches the arm on, and waits until the API server shows it in effect. */
  enter(arm: Arm, round: number): Promise<void>;
  /** Switches it off again, when the next arm needs that. */
  leave?(arm: Arm, round: number): Promise<void>;
  /** The load of one round: its latencies (ms) and whatever else the comparison counts. */
  load(arm: Arm, round: number): Promise<Load>;
}

export interface InterleavedRound<Arm extends string, Load> {
  arm: Arm;
  /** From 0. */
  round: number;
  load: Load;
  /** The load's wall time, seconds. */
  wallSeconds: number;
  /** kube-apiserver CPU seconds during the load above its idle rate just before. */
  apiserverCpuSeconds: number;
  /** This process's CPU seconds during the load (user + system). */
  benchProcessCpuSeconds: number;
  /** The 1-minute load average at the start and at the end of the load. */
  loadAverage: [number, number];
}

/** Runs `rounds` rounds of every arm, interleaved, calling `report` after each; returns every round. */
export async function interleaved<Arm extends string, Load extends { latencies: number[] }>(
  o: InterleavedOptions<Arm, Load>,
  report: (r: InterleavedRound<Arm, Load>) => void = () => {},
): Promise<Array<InterleavedRound<Arm, Load>>> {
  const out: Array<InterleavedRound<Arm, Load>> = [];
  for (let round = 0; round < o.rounds; round++) {
    for (const arm of o.arms) {
      await o.enter(arm, round);
      const idleFrom = procCpuSeconds(o.apiserverPid);
      const idleStarted = performance.now();
      await sleep(o.idleSeconds * 1000);
      const idleRate = (procCpuSeconds(o.apiserverPid) - idleFrom) / ((performance.now() - idleStarted) / 1000);
      const loadStart = loadavg()[0]!;
      const cpuFrom = procCpuSeconds(o.apiserverPid);
      const selfFrom = process.cpuUsage();
      const started = performance.now();
      const load = await o.load(arm, round);
      const wallSeconds = (performance.now() - started) / 1000;
      const self = process.cpuUsage(selfFrom);
      const r: InterleavedRound<Arm, Load> = {
        arm,
        round,
        load,
        wallSeconds,
        apiserverCpuSeconds: procCpuSeconds(o.apiserverPid) - cpuFrom - idleRate * wallSeconds,
        benchProcessCpuSeconds: (self.user + self.system) / 1e6,
        loadAverage: [loadStart, loadavg()[0]!],
      };
      out.push(r);
      report(r);
      await o.leave?.(arm, round);
    }
  }
  return out;
}
