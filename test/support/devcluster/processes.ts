/** Child processes of the local control plane: started with logs to files, all killed on exit. */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';

const running = new Set<ChildProcess>();
let hooked = false;

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
    process.on(signal, () => {
      killAll('SIGTERM');
      process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1));
    });
  }
}

export interface Managed {
  name: string;
  child: ChildProcess;
  logFile: string;
  /** Resolves when the process has exited. */
  exited: Promise<number | null>;
  stop(timeoutMs?: number): Promise<void>;
}

export function startProcess(name: string, command: string, args: string[], logFile: string, env: NodeJS.ProcessEnv = process.env): Managed {
  hookExit();
  const fd = openSync(logFile, 'a');
  const child = spawn(command, args, { stdio: ['ignore', fd, fd], env });
  closeSync(fd);
  running.add(child);
  const exited = new Promise<number | null>((resolve) => {
    child.on('exit', (code) => {
      running.delete(child);
      resolve(code);
    });
    child.on('error', () => {
      running.delete(child);
      resolve(null);
    });
  });
  return {
    name,
    child,
    logFile,
    exited,
    async stop(timeoutMs = 5000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
