/** Child processes of the local control plane: started with logs to files, all killed on exit. */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';

const running = new Set<ChildProcess>();
let hooked = false;
/** The signal handlers hookExit installed, so a caller with its own shutdown can remove exactly these. */
const signalHandlers = new Map<NodeJS.Signals, () => void>();

function killAll(signal: NodeJS.Signals = 'SIGTERM'): void {
  for (const child of running) {
    try {
      if (child.pid) process.kill(child.pid, signal);
    } catch {
      // already gone
    }
  }
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => killAll('SIGKILL'));
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const handler = () => {
      killAll('SIGTERM');
      process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1));
    };
    signalHandlers.set(signal, handler);
    process.on(signal, handler);
  }
}

/**
 * For a caller that shuts its processes down itself on these signals (`make run`): removes the
 * handlers above, and only those. Removing every listener would also remove tsx's own, which tells
 * the tsx parent that the signal arrived; without it tsx SIGKILLs this process 60 ms later, in the
 * middle of the shutdown, and the API server is left running.
 */
export function handOverSignals(signals: readonly NodeJS.Signals[]): void {
  hookExit();
  for (const signal of signals) {
    const handler = signalHandlers.get(signal);
    if (handler) process.off(signal, handler);
    signalHandlers.delete(signal);
  }
}

export interface Managed {
  name: string;
  child: ChildProcess;
  pid: number;
  logFile: string;
  /** Resolves when the process has exited: its code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends a signal unless it has already exited. */
  kill(signal?: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves once it has exited. */
  stop(timeoutMs?: number): Promise<void>;
}

/** The one way tests, benches and `make run` start a process: output appended to logFile, killed with this one. */
export function startProcess(
  name: string,
  command: string,
  args: string[],
  logFile: string,
  env: NodeJS.ProcessEnv = process.env,
  options: { cwd?: string; pipeStdout?: boolean } = {},
): Managed {
  hookExit();
  const fd = openSync(logFile, 'a');
  // pipeStdout: the caller reads stdout (e.g. a JSON line with the port); stderr still goes to the log.
  const child = spawn(command, args, {
    stdio: ['ignore', options.pipeStdout ? 'pipe' : fd, fd],
    env,
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  closeSync(fd);
  running.add(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
    child.on('error', () => {
      running.delete(child);
      resolve({ code: null, signal: null });
    });
  });
  const alive = () => child.exitCode === null && child.signalCode === null;
  return {
    name,
    child,
    pid: child.pid ?? -1,
    logFile,
    exited,
    kill(signal: NodeJS.Signals = 'SIGTERM') {
      if (alive()) child.kill(signal);
    },
    async stop(timeoutMs = 5000) {
      if (!alive()) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
