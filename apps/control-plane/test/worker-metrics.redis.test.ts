// anneal_pool_worker_heartbeat_age_seconds on /metrics: every worker the registry knows, with the
// age of its last heartbeat — including one that died without a clean shutdown (its record
// expired, its own metrics endpoint is gone), which is what the lost-worker alert needs.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getWorker, heartbeatWorker, removeWorker } from '@anneal/store';
import { type TestPlane, eventually, testPlane } from './helpers.ts';

let plane: TestPlane;
beforeEach(async () => {
  plane = await testPlane();
});
afterEach(async () => {
  await plane.cleanup();
});

const AGE = 'anneal_pool_worker_heartbeat_age_seconds';

const beat = (id: string, pool: string) => ({
  id,
  pool,
  slots: 1,
  busy: 0,
  runs: [],
  startedAt: new Date().toISOString(),
});

/** Heartbeat ages on /metrics, by `pool/worker`. */
async function ages(): Promise<Map<string, number>> {
  const text = (await plane.app.inject('/metrics')).body;
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${AGE}\\{pool="([^"]+)",worker="([^"]+)"\\} (\\S+)$`).exec(line);
    if (m) out.set(`${m[1]}/${m[2]}`, Number(m[3]));
  }
  return out;
}

describe('worker heartbeat ages on /metrics', () => {
  it('reports live and crashed workers, and forgets cleanly stopped ones', async () => {
    const now = Date.now();
    await heartbeatWorker(plane.store, beat('live', 'gpu'), 30, new Date(now));
    // last heartbeat 10 minutes ago, record TTL 1 s: the worker crashed
    await heartbeatWorker(plane.store, beat('crashed', 'gpu'), 1, new Date(now - 600_000));
    await heartbeatWorker(plane.store, beat('stopped', 'default'), 30, new Date(now));
    await eventually(async () => (await getWorker(plane.store, 'crashed')) === null);
    await removeWorker(plane.store, 'stopped');

    const seen = await ages();
    expect([...seen.keys()].sort()).toEqual(['gpu/crashed', 'gpu/live']);
    const elapsed = (Date.now() - now) / 1000;
    expect(seen.get('gpu/live')).toBeGreaterThanOrEqual(0);
    expect(seen.get('gpu/live')).toBeLessThanOrEqual(elapsed + 0.001);
    expect(seen.get('gpu/crashed')).toBeGreaterThanOrEqual(600);
    expect(seen.get('gpu/crashed')).toBeLessThanOrEqual(600 + elapsed + 0.001);

    // the crashed worker leaves cleanly after all (e.g. an operator removed it): gone next scrape
    await removeWorker(plane.store, 'crashed', 'gpu');
    expect([...(await ages()).keys()]).toEqual(['gpu/live']);
  });
});
