import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SearchWebTool, SearxngBackend, type RubricJudge } from '@anneal/envs';
import { Registry, createMetrics } from '@anneal/telemetry';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { instrumentJudge, instrumentSearch, instrumentTrainer } from './instrument.ts';
import { ShiftedTrainerModel } from '../../test/executors/fakes.ts';

let server: Server;
let url: string;
beforeEach(async () => {
  // A SearXNG that fails every search (500), like one whose upstream engines are down.
  server = createServer((_req, res) => {
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.end('upstream down');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(() => new Promise<void>((resolve) => server.close(() => resolve())));

function workerMetrics() {
  const registry = new Registry();
  const metrics = createMetrics(registry, {
    app: 'worker',
    version: 't',
    worker: { pool: 'gpu', id: 'w1' },
    defaultMetrics: false,
  });
  const errors = async (subsystem: string) => {
    const metric = await registry.getSingleMetric('anneal_worker_errors_total')?.get();
    return metric?.values.find((v) => v.labels.subsystem === subsystem)?.value;
  };
  const requests = async (engine: string, outcome: string) => {
    const metric = await registry
      .getSingleMetric('anneal_worker_engine_request_duration_seconds')
      ?.get();
    return metric?.values.find(
      (v) =>
        (v as { metricName?: string }).metricName?.endsWith('_count') &&
        v.labels.engine === engine &&
        v.labels.outcome === outcome,
    )?.value;
  };
  return { metrics, errors, requests };
}

describe('worker error counters', () => {
  it('a SearXNG failure is a failed tool call (e_i) and a tool error on /metrics', async () => {
    const { metrics, errors, requests } = workerMetrics();
    expect(await errors('tool')).toBe(0);
    const backend = instrumentSearch(new SearxngBackend('web', { baseUrl: url }), metrics);
    const session = new SearchWebTool(backend).session();
    const record = await session.call('capital of france');
    expect(record.failed).toBe(true);
    expect(await errors('tool')).toBe(1);
    expect(await requests('search', 'error')).toBe(1);
    await session.call('second query');
    expect(await errors('tool')).toBe(2);
  });

  it('judge calls are measured; a failed saveWeights is a checkpoint error', async () => {
    const { metrics, errors, requests } = workerMetrics();
    let fail = false;
    const judge: RubricJudge = {
      name: 'j',
      judge: async (_p, _r, rubrics) => {
        if (fail) throw new Error('judge down');
        return rubrics.map(() => true);
      },
    };
    const measured = instrumentJudge(judge, metrics);
    expect(await measured.judge('p', 'r', [{ text: 'polite' }])).toEqual([true]);
    expect(await requests('judge', 'ok')).toBe(1);
    fail = true;
    await expect(measured.judge('p', 'r', [{ text: 'polite' }])).rejects.toThrow('judge down');
    expect(await errors('reward')).toBe(1);

    const inner = new ShiftedTrainerModel(0);
    inner.saveWeights = () => Promise.reject(new Error('disk full'));
    const trainer = instrumentTrainer(
      {
        capabilities: { kinds: ['sft'], losses: ['cross_entropy'], reduction: 'sum' },
        createModel: async () => inner,
        close: async () => undefined,
      },
      metrics,
    );
    const model = await trainer.createModel({ baseModel: 'x', loraRank: 1 });
    await expect(model.saveWeights('step-1')).rejects.toThrow('disk full');
    expect(await errors('checkpoint')).toBe(1);
    expect(await errors('trainer')).toBe(0);
  });
});
