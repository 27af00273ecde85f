/**
 * `npm run lint`: the layers of src/ (docs/design.md "Code map and layers", docs/adr/0069-code-structure.md).
 *
 *   domain       pure: types, schema, quantities, budget, rules, desired objects, plans, the view's answers
 *   adapters     I/O: Kubernetes clients and watches, the headroom ledger, the hub client, certificates, logs
 *   entry points what a command runs: src/cli, the webhook (its headroom guard in src/webhook/headroom/), the controller,
 *                the kubectl plugin
 *
 * A module imports its own layer or a lower one; the rules below say what each may not import.
 */

/** The pure domain: no I/O, no clock read by default (src/clock.ts is the port), no entry point. */
const DOMAIN = [
  '^src/(quantity|validate|render|mutate)/',
  '^src/config/(config|schema|configmap)[.]ts$',
  '^src/plan/(types|format|fleet|plan|sync|snapshot-file)[.]ts$',
  '^src/view/(api|fleet)[.]ts$',
  '^src/fleet/(shares|member|member-budget|member-heartbeat|give-back|enforced-record|fleet-budget-object|fleet-budget-crd|fleet-shares-policy|hub-record)[.]ts$',
  '^src/(canonical-json|order|clock|deadline)[.]ts$',
];

/** The core of the domain: what every other module judges with. It sits below the desired objects, plans and views. */
const CORE = ['^src/(quantity|validate)/'];

/** I/O adapters: they talk to the apiserver, the hub, the disk or the log, and are driven by the entry points. */
const ADAPTERS = [
  '^src/kube/',
  '^src/certs/',
  '^src/config/load[.]ts$',
  '^src/ledger/',
  '^src/fleet/(hub-client|hub-transaction|enforced-limit)[.]ts$',
  '^src/(log|log-batch|listen)[.]ts$',
  '^src/view/server[.]ts$',
];

/** Entry points: the commands and the long-running processes they start. */
const ENTRY_POINTS = ['^src/cli/', '^src/controller/', '^src/webhook/', '^src/kubectl/'];

/** Packages and Node built-ins that do I/O (or hold process-wide state: metrics registries, loggers). */
const IO_PACKAGES = [
  '^@kubernetes/client-node$',
  '^express$',
  '^execa$',
  '^pino(-pretty)?$',
  '^prom-client$',
  '^node-forge$',
  '^p-limit$',
  '^commander$',
  '^(node:)?(fs|fs/promises|net|http|https|http2|tls|dgram|child_process|os|worker_threads|cluster|process|readline)$',
];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A module may not import, directly or through others, a module that imports it.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'domain-does-no-io',
      severity: 'error',
      comment:
        'The pure domain (types, schema, quantities, budget, rules, desired objects) imports no package or built-in that does I/O: it takes what it judges, and the instant, as arguments.',
      from: { path: DOMAIN },
      to: { path: IO_PACKAGES },
    },
    {
      name: 'domain-imports-no-adapter-or-entry-point',
      severity: 'error',
      comment:
        'The pure domain imports no I/O adapter (Kubernetes clients, the ledger, the hub, certificates, the log) and no entry point (cli, webhook, controller, kubectl plugin).',
      from: { path: DOMAIN },
      to: { path: [...ADAPTERS, ...ENTRY_POINTS] },
    },
    {
      name: 'domain-reads-no-clock',
      severity: 'error',
      comment:
        'The pure domain never asks what time it is: every instant (bursts, B2, budgets and the shares memo) is a parameter or travels in the request the caller builds (ReviewContext.at, PlanInput.at, RenderOptions.at, ViewRequest.at). Only the edges (src/cli, src/webhook, src/controller, src/kubectl, the view server) import src/clock.ts and call processNow() (docs/adr/0069-code-structure.md).',
      from: { path: DOMAIN, pathNot: '^src/clock[.]ts$' },
      to: { path: '^src/clock[.]ts$' },
    },
    {
      name: 'core-below-desired-objects',
      severity: 'error',
      comment:
        "Quantities and the rules (src/quantity, src/validate) sit below what is built from them: they import no desired-object builder (src/render), mutation, plan, view or configuration loader (the fleet's share algebra, src/fleet/shares.ts, is domain they may use).",
      from: { path: CORE },
      to: { path: ['^src/(render|mutate|plan|view|kubectl)/', '^src/config/(load|configmap)[.]ts$'] },
    },
    {
      name: 'adapters-import-no-entry-point',
      severity: 'error',
      comment:
        'An I/O adapter (src/kube, certificates, the ledger, the hub client, the log, the view server) is driven by an entry point and imports none: types it shares with one live with the adapter.',
      from: { path: ADAPTERS },
      to: { path: ENTRY_POINTS },
    },
    {
      name: 'nothing-imports-the-cli',
      severity: 'error',
      comment:
        'src/cli is the top: flags and commands. What a command runs declares its own options (src/runtime-options.ts, src/webhook/options.ts, src/controller/options.ts).',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'no-test-code-in-src',
      severity: 'error',
      comment:
        'The shipped code imports nothing from test/ (test hooks such as the file-driven clock live in test/support).',
      from: { path: '^src/' },
      to: { path: '^(test|bench|hack)/' },
    },
    {
      name: 'controller-and-fleet-not-via-webhook',
      severity: 'error',
      comment:
        'The controller and the fleet code reach the headroom ledger through its adapter (src/ledger/), never through the webhook: src/webhook/ is an entry point (docs/adr/0003-headroom-ledger.md).',
      from: { path: '^src/(controller|fleet)/' },
      to: { path: '^src/webhook/' },
    },
    {
      name: 'headroom-guard-apart-from-the-server',
      severity: 'error',
      comment:
        "The headroom guard (src/webhook/headroom/, Q5: the budget invariant under concurrency, its README.md) takes of the rest of the webhook only the admission request's shape and verdicts (src/webhook/review.ts): not the HTTPS server, its start-up, metrics or options. The rest of the webhook reaches the guard through guard.ts, and the fleet's growth options through fleet-growth.ts.",
      from: { path: '^src/webhook/headroom/' },
      to: { path: '^src/webhook/', pathNot: ['^src/webhook/headroom/', '^src/webhook/review[.]ts$'] },
    },
    {
      name: 'webhook-enters-the-guard-by-its-door',
      severity: 'error',
      comment:
        'Outside src/webhook/headroom/, shipped code imports the guard (guard.ts) and the fleet growth options (fleet-growth.ts) only: the other files are its inner steps (src/webhook/headroom/README.md).',
      from: { path: '^src/', pathNot: '^src/webhook/headroom/' },
      to: { path: '^src/webhook/headroom/', pathNot: '^src/webhook/headroom/(guard|fleet-growth)[.]ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
