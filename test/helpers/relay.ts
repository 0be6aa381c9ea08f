// A TCP relay in front of a server that a test can cut (every connection dropped, new ones refused), mend (listening
// again on the same port) or stall: a network fault between two real processes, neither of them told.
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface CuttableRelay {
  /** http://127.0.0.1:port (same port after mend(); a TLS client uses the port alone). */
  endpoint: string;
  port: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  cut(): void;
  mend(): Promise<void>;
  /** Connections stay open but nothing passes. */
  stall(): void;
  close(): void;
}

export async function cuttableRelay(target: string): Promise<CuttableRelay> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let listenPort = 0;
  let accepted = 0;
  const listen = () =>
    new Promise<void>((resolve) => {
      server = createServer((client) => {
        accepted++;
        const upstream = connect(Number(port), hostname);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('error', () => {});
          socket.on('close', () => {
            sockets.delete(socket);
            client.destroy();
            upstream.destroy();
          });
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(listenPort, '127.0.0.1', () => {
        listenPort = (server!.address() as { port: number }).port;
        resolve();
      });
    });
  const cut = () => {
    server?.close();
    server = undefined;
    for (const socket of sockets) socket.destroy();
  };
  const stall = () => {
    for (const socket of sockets) {
      socket.unpipe();
      socket.pause();
    }
  };
  await listen();
  return {
    endpoint: `http://127.0.0.1:${listenPort}`,
    port: listenPort,
    get accepted() {
      return accepted;
    },
    cut,
    mend: listen,
    stall,
    close: cut,
  };
}
