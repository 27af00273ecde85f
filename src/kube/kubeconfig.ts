/**
 * A KubeConfig whose API clients reuse their connections to the apiserver.
 *
 * @kubernetes/client-node 2.0 builds a new undici Agent for every request
 * (`applySecurityAuthentication` → `createDispatcher`), so every call opens a new TCP connection and
 * does a full TLS handshake on both sides; the connections linger until their keep-alive runs out.
 * Measured against the local control plane: 79 connections and ≈ 8.9 ms of client CPU per GET for
 * 200 sequential GETs, against 1 connection and ≈ 3.8 ms with the Agent reused (loaded machine).
 * The headroom ledger writes once per admitted growth, so this is on the webhook's request path.
 *
 * The first Agent built for a (cluster, user) pair is kept, as client-node already does for its own
 * https.Agent cache; the per-request one is closed unused. Bearer tokens are still read per request
 * (they go in a header), so rotated ServiceAccount tokens keep working.
 */
import * as k8s from '@kubernetes/client-node';

type RequestContext = Parameters<k8s.KubeConfig['applySecurityAuthentication']>[0];
type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;

export class PooledKubeConfig extends k8s.KubeConfig {
  private readonly dispatchers = new Map<string, Dispatcher>();

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const fresh = context.getDispatcher();
    if (!fresh) return;
    const key = JSON.stringify([this.getCurrentCluster()?.name ?? '', this.getCurrentUser()?.name ?? '']);
    const kept = this.dispatchers.get(key);
    if (!kept) {
      this.dispatchers.set(key, fresh);
      return;
    }
    context.setDispatcher(kept);
    void fresh.close().catch(() => {});
  }
}

/**
 * The kubeconfig of `tenantgate webhook|controller`: the file given, else the default (in-cluster, $KUBECONFIG,
 * ~/.kube/config).
 */
export function loadKubeConfig(file?: string): PooledKubeConfig {
  const kc = new PooledKubeConfig();
  if (file) kc.loadFromFile(file);
  else kc.loadFromDefault();
  return kc;
}
