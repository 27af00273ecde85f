/**
 * The apiserver's side of webhook client authentication (ADR 0034): the kubeconfig a
 * WebhookAdmissionConfiguration points at (the client certificate the apiserver presents to a webhook)
 * and the AdmissionConfiguration plugins that use it. Pure: objects to serialise; files.ts writes them.
 */
import type { KeyPair } from './pki.js';

/** The common name of the client certificate tenantgate generates for the apiserver (`--client-allowed-names`). */
export const APISERVER_CLIENT_NAME = 'kube-apiserver-webhook-client';

/**
 * A kubeconfig whose users are the webhooks' hosts: the apiserver presents `client` to a webhook whose
 * Service DNS name (`svc.ns.svc`, with `:port` unless 443) or URL host matches a name; `*` matches all.
 */
export function admissionKubeconfig(client: KeyPair, hosts: readonly string[]): Record<string, unknown> {
  const user = { 'client-certificate-data': Buffer.from(client.certPem).toString('base64'), 'client-key-data': Buffer.from(client.keyPem).toString('base64') };
  return { apiVersion: 'v1', kind: 'Config', users: hosts.map((name) => ({ name, user })) };
}

/** The plugins of an AdmissionConfiguration that make both webhook plugins use `kubeconfigPath` (absolute). */
export function webhookAdmissionPlugins(kubeconfigPath: string): Array<Record<string, unknown>> {
  return ['ValidatingAdmissionWebhook', 'MutatingAdmissionWebhook'].map((name) => ({
    name,
    configuration: { apiVersion: 'apiserver.config.k8s.io/v1', kind: 'WebhookAdmissionConfiguration', kubeConfigFile: kubeconfigPath },
  }));
}

/** An AdmissionConfiguration with `plugins` (e.g. webhookAdmissionPlugins and a ResourceQuota configuration). */
export function admissionConfiguration(plugins: Array<Record<string, unknown>>): Record<string, unknown> {
  return { apiVersion: 'apiserver.config.k8s.io/v1', kind: 'AdmissionConfiguration', plugins };
}
