// A loopback TCP load balancer in front of tenantgate replicas, as a Service spreads connections over its endpoints:
// round robin over the backends it is given (with a readiness probe: over those whose /readyz answers 200), the next
// one tried when one refuses. Never looks into the bytes (TLS passes through).
import { request } from 'node:https';
import { connect, createServer, type Socket } from 'node:net';

export interface LoadBalancerOptions {
  /**
   * Probe each backend's /readyz (no credentials) this often, as a kubelet does; connections go to ready ones only. As
   * the kubelet's (failureThreshold 3), a backend is taken out after 3 failed probes in a row, not one slow answer.
   */
  readiness?: { caPem: string; intervalMs: number };
}

/** The kubelet's default readiness failureThreshold. */
const FAILURE_THRESHOLD = 3;

function readyz(port: number, caPem: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', ca: caPem, agent: false, timeout: 1_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

export interface LoadBalancer {
  /** https://127.0.0.1:port: the address clients use (the replicas' serving certificate covers 127.0.0.1). */
  url: string;
  /** The replicas' ports, in round-robin order (a restarted replica listens on another port). */
  setBackends(ports: readonly number[]): void;
  /** Connections relayed so far, by the backend port that took them. */
  readonly connectionsByBackend: ReadonlyMap<number, number>;
  /** The backends that passed their last readiness probe (all of them without a probe). */
  readonly ready: readonly number[];
  /** Client connections no backend took (every one refused). */
  readonly unplaced: number;
  close(): Promise<void>;
}

export async function startLoadBalancer(backends: readonly number[], options: LoadBalancerOptions = {}): Promise<LoadBalancer> {
  let ports = [...backends];
  const probe = options.readiness;
  /** Ports that answered their last probe with 200. */
  const ready = new Set<number>(probe === undefined ? ports : []);
  /** Failed probes in a row, by port. */
  const failedInARow = new Map<number, number>();
  const candidates = () => (probe === undefined ? ports : ports.filter((port) => ready.has(port)));
  let probing: NodeJS.Timeout | undefined;
  let closed = false;
  const probeAll = async () => {
    const results = await Promise.all(ports.map(async (port) => [port, await readyz(port, probe!.caPem)] as const));
    for (const [port, ok] of results) {
      const failures = ok ? 0 : (failedInARow.get(port) ?? 0) + 1;
      failedInARow.set(port, failures);
      if (ok) ready.add(port);
      else if (failures >= FAILURE_THRESHOLD) ready.delete(port);
    }
  };
  if (probe !== undefined) {
    await probeAll();
    const again = () => {
      if (!closed) probing = setTimeout(() => void probeAll().then(again), probe.intervalMs);
    };
    again();
  }
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
    const choices = candidates();
    if (tried >= choices.length) {
      unplaced++;
      client.destroy();
      return;
    }
    const port = choices[next++ % choices.length]!;
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
      if (probe === undefined) for (const port of list) ready.add(port);
    },
    get ready() {
      return ports.filter((port) => ready.has(port));
    },
    connectionsByBackend,
    get unplaced() {
      return unplaced;
    },
    close() {
      closed = true;
      clearTimeout(probing);
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
