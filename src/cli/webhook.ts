/** `tenantgate webhook`: its flags; the work starts in src/webhook/start.ts (loaded only when the command runs). */
import { Option, type Command } from 'commander';
import { integerIn, withRuntimeOptions, type RuntimeOptions, type WebhookCliOptions } from './options.js';
import { WEBHOOK_DEFAULTS as D } from '../webhook/options.js';

export function registerWebhookCommand(root: Command): void {
  withRuntimeOptions(root.command('webhook').description('validating and mutating admission over HTTPS'))
    .option('--port <port>', 'HTTPS port', integerIn(0, 65535), D.port)
    .option('--host <address>', 'address to listen on', D.host)
    .option('--cert <file>', 'serving certificate (reloaded when it changes)', D.cert)
    .option('--key <file>', 'its private key', D.key)
    .option(
      '--client-ca <file>',
      'only callers with a certificate this CA signed (the apiserver, via its admission configuration) may send ' +
        'admission reviews; others get 401 (reloaded when it changes)',
    )
    .option(
      '--client-allowed-names <names>',
      'with --client-ca: comma-separated common names allowed (default: any certificate the CA signed; others get 403)',
    )
    .addOption(
      new Option(
        '--allowed-decisions <mode>',
        'records of allowed admission decisions: all (one each), or summary (denials, errors, warnings and slow ' +
          'decisions one each; the other allowed ones counted in one record every 10 s)',
      )
        .choices(['all', 'summary'])
        .default(D.allowedDecisions),
    )
    .option(
      '--slow-decision-ms <ms>',
      'with --allowed-decisions=summary: an allowed decision at least this slow keeps its own record',
      integerIn(1, 60_000),
      D.slowDecisionMs,
    )
    .option(
      '--shutdown-delay <seconds>',
      'on SIGTERM: seconds to keep answering reviews with /readyz failing, so the endpoints drop this replica ' +
        'first; then stop accepting and finish the requests in flight (at most 10 s more)',
      integerIn(0, 120),
      D.shutdownDelaySeconds,
    )
    .action(async (o: RuntimeOptions & WebhookCliOptions) => {
      const { runWebhook } = await import('../webhook/start.js');
      process.exitCode = await runWebhook(o);
    });
}
