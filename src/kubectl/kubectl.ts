/**
 * The plugin's only I/O with the cluster: it runs the real kubectl (docs/adr/0030-what-tenants-see.md),
 * so kubeconfig contexts, exec/auth plugins, impersonation and every other kubectl flag behave as they
 * do for `kubectl` itself.
 */
import { execa } from 'execa';
import { kubectlArgs, type KubectlFlags } from './flags.js';

export interface KubectlRun {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/** Which kubectl: $TENANTGATE_KUBECTL, else `kubectl` on PATH (the one that started the plugin, normally). */
function kubectlBinary(env: NodeJS.ProcessEnv = process.env): string {
  return env.TENANTGATE_KUBECTL || 'kubectl';
}

export class KubectlError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly run: KubectlRun,
  ) {
    super(run.stderr.trim() || `kubectl ${args.join(' ')} exited with ${run.exitCode}`);
  }
  /** The apiserver answered 404 (NotFound), as kubectl prints it. */
  get notFound(): boolean {
    return /\(NotFound\)|could not find the requested resource|\bnot found\b/i.test(this.run.stderr);
  }
}

export class Kubectl {
  constructor(
    readonly flags: KubectlFlags,
    private readonly binary = kubectlBinary(),
  ) {}

  /** Runs kubectl with the user's flags (-n only when `namespaced`), never throwing on a non-zero exit. */
  async run(args: string[], options: { input?: string; namespaced?: boolean } = {}): Promise<KubectlRun> {
    const all = [...kubectlArgs(this.flags, options.namespaced ?? false), ...args];
    const result = await execa(this.binary, all, {
      reject: false,
      encoding: 'utf8',
      stripFinalNewline: false,
      ...(options.input !== undefined ? { input: options.input } : { stdin: 'ignore' }),
    });
    if (result.failed && result.exitCode === undefined)
      throw new Error(
        `cannot run ${this.binary}: ${result.shortMessage ?? result.message} (set TENANTGATE_KUBECTL to ` +
          `kubectl's path)`,
      );
    return { stdout: String(result.stdout), stderr: String(result.stderr), exitCode: result.exitCode ?? 1 };
  }

  /** `kubectl <args> -o json`, parsed; a non-zero exit throws KubectlError. */
  async json<T>(args: string[]): Promise<T> {
    const full = [...args, '-o', 'json'];
    const run = await this.run(full);
    if (run.exitCode !== 0) throw new KubectlError(full, run);
    return JSON.parse(run.stdout) as T;
  }

  /** `kubectl get --raw PATH`, parsed; undefined on 404. */
  async raw<T>(path: string): Promise<T | undefined> {
    const args = ['get', '--raw', path];
    const run = await this.run(args);
    if (run.exitCode === 0) return JSON.parse(run.stdout) as T;
    const err = new KubectlError(args, run);
    if (err.notFound) return undefined;
    throw err;
  }
}
