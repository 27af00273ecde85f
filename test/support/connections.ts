/**
 * Which connection each HTTP request of this process went over, seen from inside the process through
 * node:diagnostics_channel: node:http(s) publishes `http.client.response.finish` and undici (client-node
 * 2.0's fetch) `undici:client:sendHeaders`, both with the socket. No `ss`, nothing added to the product.
 */
import diagnostics from 'node:diagnostics_channel';
import type { Socket } from 'node:net';

export interface ObservedRequests<T> {
  result: T;
  /** The local port of the connection each request to the port went over, in order. */
  localPorts: number[];
}

/** Runs `work` and records the local port of every request it (or anything else in this process) sends to `remotePort`. */
export async function localPortsOfRequestsTo<T>(
  remotePort: number,
  work: () => Promise<T>,
): Promise<ObservedRequests<T>> {
  const localPorts: number[] = [];
  const record = (socket: Socket | null | undefined): void => {
    if (socket?.remotePort === remotePort && socket.localPort !== undefined) localPorts.push(socket.localPort);
  };
  const onNodeResponse = (message: unknown): void =>
    record((message as { response?: { socket?: Socket | null } }).response?.socket);
  const onUndiciHeaders = (message: unknown): void => record((message as { socket?: Socket }).socket);
  diagnostics.subscribe('http.client.response.finish', onNodeResponse);
  diagnostics.subscribe('undici:client:sendHeaders', onUndiciHeaders);
  try {
    return { result: await work(), localPorts };
  } finally {
    diagnostics.unsubscribe('http.client.response.finish', onNodeResponse);
    diagnostics.unsubscribe('undici:client:sendHeaders', onUndiciHeaders);
  }
}
