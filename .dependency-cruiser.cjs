/** `npm run lint`: the import graph of src/ has no cycles (docs/design.md: domain logic reads top-down). */
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
      name: 'controller-and-fleet-not-via-webhook',
      severity: 'error',
      comment:
        'The controller and the fleet code reach the headroom ledger through its adapter (src/ledger/), never through the webhook: src/webhook/ is an entry point (docs/adr/0068-headroom-guard-by-job.md).',
      from: { path: '^src/(controller|fleet)/' },
      to: { path: '^src/webhook/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
