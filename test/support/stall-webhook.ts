/**
 * A validating webhook registered with the test control plane that holds the DELETE of one namespace
 * until the test answers it: a cascade can then be stopped at an exact step (the k-th namespace
 * delete in flight) instead of racing a poll. It judges nothing else.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import { generateWebhookCerts } from '../../src/certs/files.js';
import { cluster, kubectl } from './cluster.js';

export interface StalledDelete {
  /** Resolves when the apiserver has asked about the namespace's DELETE (the request is now held). */
  readonly held: Promise<void>;
  /** Answers the held request (and any later one) with allowed or denied. */
  answer(allowed: boolean): void;
  /** Unregisters the webhook and closes the server. */
  stop(): Promise<void>;
}

export async function stallNamespaceDelete(namespace: string): Promise<StalledDelete> {
  const name = `e2e-stall-${namespace}`;
  const certs = await generateWebhookCerts(join(cluster().dir, name), { ips: ['127.0.0.1'] });
  let verdict: boolean | undefined;
  let probes = 0;
  const waiting: Array<(allowed: boolean) => void> = [];
  let heldResolve!: () => void;
  const held = new Promise<void>((resolve) => (heldResolve = resolve));
  const server: Server = createServer(
    { cert: await readFile(certs.cert), key: await readFile(certs.key) },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const review = JSON.parse(Buffer.concat(chunks).toString()) as { request: { uid: string; dryRun?: boolean } };
        const respond = (allowed: boolean) => {
          res.setHeader('content-type', 'application/json');
          res.end(
            JSON.stringify({
              apiVersion: 'admission.k8s.io/v1',
              kind: 'AdmissionReview',
              response: {
                uid: review.request.uid,
                allowed,
                ...(allowed ? {} : { status: { code: 403, message: 'held by the e2e test' } }),
              },
            }),
          );
        };
        // A dry run is the test's own probe that the apiserver calls this webhook: answered, never held.
        if (review.request.dryRun) {
          probes += 1;
          respond(false);
          return;
        }
        heldResolve();
        if (verdict !== undefined) respond(verdict);
        else waiting.push(respond);
      });
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  const configuration = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name },
    webhooks: [
      {
        name: `${name}.e2e.tenantgate.io`,
        clientConfig: { url: `https://127.0.0.1:${port}/`, caBundle: certs.caBundle },
        rules: [
          { apiGroups: [''], apiVersions: ['v1'], operations: ['DELETE'], resources: ['namespaces'], scope: '*' },
        ],
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
        failurePolicy: 'Fail',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        timeoutSeconds: 30,
      },
    ],
  };
  await kubectl('admin', ['apply', '-f', '-'], { input: JSON.stringify(configuration) });
  // In force once the apiserver calls it: a dry-run delete reaches it (and is refused, deleting nothing).
  const deadline = Date.now() + 30_000;
  while (probes === 0) {
    if (Date.now() > deadline) throw new Error(`webhook ${name} not called by the apiserver within 30 s`);
    await kubectl('admin', ['delete', 'namespace', namespace, '--dry-run=server'], { reject: false });
    if (probes === 0) await new Promise((r) => setTimeout(r, 200));
  }
  const answer = (allowed: boolean) => {
    verdict = allowed;
    for (const respond of waiting.splice(0)) respond(allowed);
  };
  return {
    held,
    answer,
    async stop() {
      await kubectl('admin', ['delete', 'validatingwebhookconfiguration', name, '--ignore-not-found']);
      answer(true);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
