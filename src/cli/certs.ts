/**
 * `tenantgate certs generate`: CA + webhook serving certificate, prints the caBundle; `--client`: the apiserver's
 * client certificate too.
 */
import { generateWebhookClientCerts, generateWebhookCerts } from '../certs/files.js';

export async function runCerts(o: {
  dir: string;
  service: string;
  namespace: string;
  client?: boolean;
}): Promise<number> {
  const files = await generateWebhookCerts(o.dir, { service: o.service, namespace: o.namespace });
  process.stderr.write(`wrote ${files.caCert}, ${files.cert}, ${files.key}\n`);
  if (o.client) {
    // The apiserver matches the webhook by its Service's DNS name (port 443, so without a port).
    const client = await generateWebhookClientCerts(o.dir, [`${o.service}.${o.namespace}.svc`]);
    process.stderr.write(
      `wrote ${client.clientCaCert} (the webhook's --client-ca; the chart's webhook.clientCA.configMap holds it ` +
        `as ca.crt),\n` +
        `${client.cert}, ${client.key} (CN=${client.name}, the apiserver's client certificate),\n` +
        (`${client.kubeconfig} and ${client.admissionConfig}: on the control plane, pass the latter to ` +
          `kube-apiserver's\n`) +
        (`--admission-control-config-file (merge its two plugins into an existing one; kubeConfigFile is an ` +
          `absolute path, keep it or edit it).\n`) +
        (`The kubeconfig names the certificate and key by absolute path: copy them to the same paths on each ` +
          `control-plane node\n`) +
        (`(or edit the paths); replacing those two files renews the certificate without restarting kube-apiserver ` +
          `(docs/adr/0034-certificates-and-client-identity.md)\n`),
    );
  }
  process.stderr.write('caBundle:\n');
  process.stdout.write(files.caBundle + '\n');
  return 0;
}
