import { type IncomingMessage, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { Registry, createMetrics, noopLogger } from '@anneal/telemetry';
import { pushgatewayUrl, startPushgateway } from './pushgateway.ts';

const received: Array<{ method?: string; url?: string; body: string }> = [];
const server = createServer((req: IncomingMessage, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    received.push({ method: req.method, url: req.url, body });
    res.writeHead(200).end();
  });
});
afterEach(() => new Promise<void>((resolve) => server.close(() => resolve())));

it('PUTs the worker registry under job/pool/worker, and once more on close', async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const registry = new Registry();
  const metrics = createMetrics(registry, {
    app: 'worker',
    version: 't',
    worker: { pool: 'gpu a', id: 'w/1' },
    defaultMetrics: false,
  });
  metrics.emit('worker:slots', { busy: 1, total: 2 });
  const url = pushgatewayUrl(base, 'gpu a', 'w/1');
  expect(url).toBe(`${base}metrics/job/anneal_worker/pool/gpu%20a/worker/w%2F1`);
  const pusher = startPushgateway(registry, { url, intervalSeconds: 3600, logger: noopLogger });
  await pusher.push();
  await pusher.close();
  expect(received).toHaveLength(2);
  expect(received[0]?.method).toBe('PUT');
  expect(received[0]?.url).toBe('/metrics/job/anneal_worker/pool/gpu%20a/worker/w%2F1');
  expect(received[0]?.body).toMatch(/anneal_worker_slots_busy\{pool="gpu a",worker="w\/1"\} 1/);
});
