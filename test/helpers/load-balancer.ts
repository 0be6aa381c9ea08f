// A loopback TCP load balancer in front of tenantgate replicas, as a Service spreads connections over its endpoints:
// round robin over the backends it is given, the next one tried when one refuses. Never looks into the bytes (TLS passes).
import { connect, createServer, type Socket } from 'node:net';

export interface LoadBalancer {
  /** https://127.0.0.1:port: the address clients use (the replicas' serving certificate covers 127.0.0.1). */
  url: string;
  /** The replicas' ports, in round-robin order (a restarted replica listens on another port). */
  setBackends(ports: readonly number[]): void;
  /** Connections relayed so far, by the backend port that took them. */
  readonly connectionsByBackend: ReadonlyMap<number, number>;
  /** Client connections no backend took (every one refused). */
  readonly unplaced: number;
  close(): Promise<void>;
}

export async function startLoadBalancer(backends: readonly number[]): Promise<LoadBalancer> {
  let ports = [...backends];
  let next = 0;
  let unplaced = 0;
  const connectionsByBackend = new Map<number, number>();
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };

  /** Connects to the backends from the next in turn, each tried once; the first that accepts takes the client. */
  const place = (client: Socket, tried: number) => {
    if (client.destroyed) return;
    if (tried >= ports.length) {
      unplaced++;
      client.destroy();
      return;
    }
    const port = ports[next++ % ports.length]!;
    const backend = connect(port, '127.0.0.1');
    track(backend);
    let connected = false;
    backend.once('error', () => {
      if (!connected) place(client, tried + 1); // after connect: the listeners below handle it
    });
    backend.once('connect', () => {
      connected = true;
      connectionsByBackend.set(port, (connectionsByBackend.get(port) ?? 0) + 1);
      backend.setNoDelay(true);
      // Either side gone: the other goes too (a replica killed resets its clients' connections, as a real one would).
      backend.on('error', () => client.destroy());
      client.on('error', () => backend.destroy());
      backend.once('close', () => client.destroy());
      client.once('close', () => backend.destroy());
      client.pipe(backend);
      backend.pipe(client);
      client.resume();
    });
  };

  const server = createServer({ pauseOnConnect: true }, (client) => {
    track(client);
    client.setNoDelay(true);
    client.on('error', () => {});
    place(client, 0);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `https://127.0.0.1:${port}`,
    setBackends(list) {
      ports = [...list];
    },
    connectionsByBackend,
    get unplaced() {
      return unplaced;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
