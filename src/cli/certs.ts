/** `tenantgate certs generate`: CA + webhook serving certificate, prints the caBundle (SPEC §7). */
import { parseArgs } from 'node:util';
import { generateWebhookCerts } from '../certs/files.js';

export async function runCerts(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'generate') throw new Error(`certs: unknown subcommand ${JSON.stringify(sub ?? '')}; allowed: generate`);
  const { values } = parseArgs({
    args: rest,
    options: {
      dir: { type: 'string', default: 'certs' },
      service: { type: 'string', default: 'tenantgate-webhook' },
      namespace: { type: 'string', default: 'tenantgate-system' },
    },
  });
  const files = await generateWebhookCerts(values.dir, { service: values.service, namespace: values.namespace });
  process.stderr.write(`wrote ${files.caCert}, ${files.cert}, ${files.key}\ncaBundle:\n`);
  process.stdout.write(files.caBundle + '\n');
  return 0;
}
