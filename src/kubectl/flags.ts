/**
 * kubectl's own flags as the plugin takes them: kubectl hands a plugin its arguments untouched, so the
 * plugin parses `--context`, `--kubeconfig`, `-n`, `--as`, `--as-group`… itself and passes them on to
 * every kubectl it runs (docs/adr/0030-what-tenants-see.md). Pure.
 */
export interface KubectlFlags {
  kubeconfig?: string;
  context?: string;
  /** kubectl's --cluster: a cluster entry of the kubeconfig (not tenantgate's cluster name). */
  cluster?: string;
  user?: string;
  namespace?: string;
  as?: string;
  asGroup?: string[];
  asUid?: string;
  server?: string;
  token?: string;
  requestTimeout?: string;
  insecureSkipTlsVerify?: boolean;
}

/** The options to declare on every command, as [flags, description] (commander syntax). */
export const KUBECTL_FLAG_OPTIONS: ReadonlyArray<readonly [string, string]> = [
  ['--kubeconfig <file>', "kubectl's: path to the kubeconfig file"],
  ['--context <name>', "kubectl's: the kubeconfig context to use"],
  ['--cluster <name>', "kubectl's: the kubeconfig cluster to use"],
  ['--user <name>', "kubectl's: the kubeconfig user to use"],
  ['-n, --namespace <namespace>', "kubectl's: the namespace scope"],
  ['--as <user>', "kubectl's: user to impersonate"],
  ['--as-group <group>', "kubectl's: group to impersonate (repeatable)"],
  ['--as-uid <uid>', "kubectl's: UID to impersonate"],
  ['-s, --server <url>', "kubectl's: the API server's address"],
  ['--token <token>', "kubectl's: bearer token"],
  ['--request-timeout <duration>', "kubectl's: e.g. 30s"],
  ['--insecure-skip-tls-verify', "kubectl's: do not check the server's certificate"],
];

/** The argument list that gives a kubectl run the same flags. `withNamespace` false leaves -n out. */
export function kubectlArgs(flags: KubectlFlags, withNamespace = true): string[] {
  const out: string[] = [];
  const add = (name: string, value: string | undefined) => {
    if (value !== undefined && value !== '') out.push(`--${name}=${value}`);
  };
  add('kubeconfig', flags.kubeconfig);
  add('context', flags.context);
  add('cluster', flags.cluster);
  add('user', flags.user);
  if (withNamespace) add('namespace', flags.namespace);
  add('as', flags.as);
  for (const g of flags.asGroup ?? []) add('as-group', g);
  add('as-uid', flags.asUid);
  add('server', flags.server);
  add('token', flags.token);
  add('request-timeout', flags.requestTimeout);
  if (flags.insecureSkipTlsVerify) out.push('--insecure-skip-tls-verify=true');
  return out;
}
