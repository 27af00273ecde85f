/** The signature of a step of a live Project's pass that may leave a namespace to Argo CD's sync (reconcile.ts). */
import type { Project } from '../../validate/types.js';
import type { StepContext } from './context.js';

/**
 * A step: it records what failed in `failures` (the pass goes on and throws them together), stops
 * between writes once `signal` aborts, and records in `graced` each namespace it left to Argo CD's
 * sync with the milliseconds left (argoCdGrace).
 */
export type GracedStep = (
  c: StepContext,
  project: Project,
  failures: string[],
  signal: AbortSignal,
  graced: Map<string, number>,
) => Promise<void>;
