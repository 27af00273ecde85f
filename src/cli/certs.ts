/** `tenantgate certs generate`: CA + webhook serving certificate, prints the caBundle. */
import { generateWebhookCerts } from '../certs/files.js';

export async function runCerts(o: { dir: string; service: string; namespace: string }): Promise<number> {
  const files = await generateWebhookCerts(o.dir, { service: o.service, namespace: o.namespace });
  process.stderr.write(`wrote ${files.caCert}, ${files.cert}, ${files.key}\ncaBundle:\n`);
  process.stdout.write(files.caBundle + '\n');
  return 0;
}
