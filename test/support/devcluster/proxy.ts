/**
 * A round-robin TCP proxy on loopback: spreads connections over webhook replicas (TLS passes through);
 * `close` cuts every connection, `pause` too but keeps the port.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface RoundRobinProxy {
  port: number;
  connections: number[];
  /** Connections the proxy cut because one leg failed, by the error's code (e.g. EMFILE: out of file descriptors). */
  failures: Record<string, number>;
  /**
   * Where new connections go from now on (as a Service's endpoints change); connections already made
   * stay with their replica. `connections` restarts at zero for the new list.
   */
  setTargets(ports: number[]): void;
  /**
   * Cuts every connection and closes each new one at once until `resume`: the targets are unreachable
   * through it, and its port stays (no rebind that another socket could win).
   */
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

/** `port` 0 picks a free one; a fixed port lets a test restore a proxy it closed where clients expect it. */
export async function startRoundRobinProxy(initialTargets: number[], port = 0): Promise<RoundRobinProxy> {
  let targets = [...initialTargets];
  let next = 0;
  const connections = targets.map(() => 0);
  const sockets = new Set<Socket>();
  const failures: Record<string, number> = {};
  let paused = false;
  const failed = (leg: string) => (err: NodeJS.ErrnoException) => {
    const key = `${leg} ${err.code ?? err.message}`;
    failures[key] = (failures[key] ?? 0) + 1;
  };
  const server: Server = createServer((client) => {
    if (paused) {
      client.destroy();
      return;
    }
    const index = next++ % targets.length;
    connections[index]! += 1;
    const upstream = connect(targets[index]!, '127.0.0.1');
    for (const s of [client, upstream]) {
      // No Nagle delay on either leg: a small TLS record is forwarded at once, as a kernel Service does.
      s.setNoDelay(true);
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
    client.on('error', (err) => {
      failed('client')(err);
      upstream.destroy();
    });
    upstream.on('error', (err) => {
      failed('upstream')(err);
      client.destroy();
    });
  });
  server.on('error', failed('accept'));
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  return {
    port: (server.address() as { port: number }).port,
    connections,
    failures,
    setTargets(ports) {
      if (ports.length === 0) throw new Error('setTargets: a proxy needs at least one target');
      targets = [...ports];
      connections.splice(0, connections.length, ...ports.map(() => 0));
      next = 0;
    },
    pause() {
      paused = true;
      for (const s of sockets) s.destroy();
    },
    resume() {
      paused = false;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
