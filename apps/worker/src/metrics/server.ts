// The worker's /metrics endpoint (node:http; Prometheus scrapes it) and a /healthz probe.
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from '@anneal/telemetry';

export interface MetricsServer {
  /** e.g. http://127.0.0.1:9464/metrics (the real port when 0 was asked). */
  url: string;
  close(): Promise<void>;
}

export async function startMetricsServer(
  registry: Registry,
  options: { host: string; port: number; health: () => Record<string, unknown> },
): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const route = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET' }).end();
    } else if (route === '/metrics') {
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        (error: unknown) => res.writeHead(500).end(String(error)),
      );
    } else if (route === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(options.health()));
    } else res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  return {
    url: `http://${host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
