/**
 * Resource lists, budgets and allocations: exact quantity arithmetic over the domain types. One import
 * for the rule engine; each job lives in its own module: resource-lists.ts (parse, format, sums),
 * budget/layers.ts (the budget model), quota-hold.ts (what quotas let a namespace hold) and shares.ts
 * (a project's shares and their sums).
 */
export type { NamespaceShare, ProjectShares, Resources } from './types.js';
export * from './resource-lists.js';
export * from './budget/layers.js';
export * from './quota-hold.js';
export * from './shares.js';
