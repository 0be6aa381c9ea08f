// The metrics listener: its own plain HTTP server answering GET /metrics, apart from the tenants' listener.
// Never serves anything but the metrics text (no tenant data, no request path of the gateway).
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TenantgateMetrics } from './metrics.ts';

export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

export async function startMetricsListener(metrics: TenantgateMetrics, host: string, port: number): Promise<MetricsListener> {
  const server: Server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at GET /metrics\n');
      return;
    }
    metrics.scrape().then(
      (text) =>
        res
          .writeHead(200, { 'content-type': metrics.registry.contentType, 'content-length': Buffer.byteLength(text) })
          .end(req.method === 'HEAD' ? undefined : text),
      (error: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics could not be collected: ${error.message}\n`),
    );
  });
  // Scrapers keep connections open between scrapes: close() ends them.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
