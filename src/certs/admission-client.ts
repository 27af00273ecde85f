/**
 * The apiserver's side of webhook client authentication (ADR 0034): the kubeconfig a
 * WebhookAdmissionConfiguration points at (the client certificate the apiserver presents to a webhook)
 * and the AdmissionConfiguration plugins that use it. Pure: objects to serialise; files.ts writes them.
 */
import { isAbsolute } from 'node:path';

/** The common name of the client certificate tenantgate generates for the apiserver (`--client-allowed-names`). */
export const APISERVER_CLIENT_NAME = 'kube-apiserver-webhook-client';

/**
 * A kubeconfig whose users are the webhooks' hosts: the apiserver presents the client certificate in
 * the files `client` names to a webhook whose Service DNS name (`svc.ns.svc`, with `:port` unless 443)
 * or URL host matches a name; `*` matches all. The files are named by path (absolute), never embedded:
 * kube-apiserver reads this kubeconfig once at start, but re-reads certificate files it names, so the
 * certificate can be renewed on disk without a restart (ADR 0034). It has no clusters (and so no
 * `certificate-authority`): kube-apiserver takes only the users from it; the webhook's serving CA is
 * each webhook configuration's caBundle.
 */
export function admissionKubeconfig(
  client: { cert: string; key: string },
  hosts: readonly string[],
): Record<string, unknown> {
  if (!isAbsolute(client.cert) || !isAbsolute(client.key)) {
    throw new Error(
      `admission kubeconfig: client-certificate ${JSON.stringify(client.cert)} and client-key ` +
        `${JSON.stringify(client.key)} must be absolute paths (kube-apiserver reads them from its own working ` +
        `directory)`,
    );
  }
  const user = { 'client-certificate': client.cert, 'client-key': client.key };
  return { apiVersion: 'v1', kind: 'Config', users: hosts.map((name) => ({ name, user })) };
}

/** The plugins of an AdmissionConfiguration that make both webhook plugins use `kubeconfigPath` (absolute). */
export function webhookAdmissionPlugins(kubeconfigPath: string): Array<Record<string, unknown>> {
  return ['ValidatingAdmissionWebhook', 'MutatingAdmissionWebhook'].map((name) => ({
    name,
    configuration: {
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'WebhookAdmissionConfiguration',
      kubeConfigFile: kubeconfigPath,
    },
  }));
}

/** An AdmissionConfiguration with `plugins` (e.g. webhookAdmissionPlugins and a ResourceQuota configuration). */
export function admissionConfiguration(plugins: Array<Record<string, unknown>>): Record<string, unknown> {
  return { apiVersion: 'apiserver.config.k8s.io/v1', kind: 'AdmissionConfiguration', plugins };
}
