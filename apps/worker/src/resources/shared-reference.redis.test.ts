// A shared reference across two workers (resources/shared-reference.ts) on real Redis and a fake
// vLLM server: the second worker loads the name and path the first offered (vLLM holds it once);
// a worker whose run ends while another worker's run still uses it leaves it loaded; when the
// last user's worker dies, its run's release (the lost-worker sweep) queues the adapter and the
// next run on the endpoint — on the surviving worker, which had forgotten it — unloads it.
import { VllmInferenceEngine } from '@anneal/engines';
import { FakeVllmServer } from '@anneal/engines/testing';
import type { AdapterDemand } from '@anneal/protocol';
import {
  createRun,
  finishRun,
  heartbeatWorker,
  keys,
  releaseRunsOfLostWorkers,
  sharedReferenceId,
  startRun,
} from '@anneal/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestEnv, resolveSpec, testEnv } from '../../test/helpers.ts';
import { sharedReferenceOf, unloadLeftReferences } from './shared-reference.ts';

let env: TestEnv;
let fake: FakeVllmServer;
const engines: VllmInferenceEngine[] = [];
beforeEach(async () => {
  env = await testEnv();
  fake = await FakeVllmServer.start({ maxLoras: 8 });
});
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
  await Promise.all([fake.close(), env.cleanup()]);
});

/** One worker process's engine for the endpoint. */
function workerEngine(instance: string): VllmInferenceEngine {
  const engine = new VllmInferenceEngine(
    { name: 'gen', replicas: [fake.url], model: 'base-model', healthCheckIntervalMs: 0 },
    { adapterInstance: instance },
  );
  engines.push(engine);
  return engine;
}

async function runningRun(reference: string, workerId: string) {
  const demand: AdapterDemand[] = [
    { role: 'inference', endpoint: 'gen', slots: 3, detail: 'test', reference },
  ];
  const spec = resolveSpec('kind: grpo', env.operatorConfig);
  const created = await createRun(env.store, { tenant: 'default', spec, adapterDemand: demand });
  if (created.status !== 'created') throw new Error(created.status);
  await heartbeatWorker(env.store, {
    id: workerId,
    pool: spec.pool,
    slots: 1,
    busy: 1,
    runs: [created.run.id],
    startedAt: new Date().toISOString(),
  });
  expect((await startRun(env.store, created.run.id, workerId)).status).toBe('started');
  return { id: created.run.id, adapterDemand: demand };
}

describe('a shared reference across workers', () => {
  it('is loaded once, kept while a user is left, and unloaded after its last user’s worker died', async () => {
    const reference = await sharedReferenceId(env.store, 'default', 'start');
    const [w1, w2] = [workerEngine('w1'), workerEngine('w2')];
    const a = await runningRun(reference, 'w1');
    const b = await runningRun(reference, 'w2');
    const useA = sharedReferenceOf(env.store, a, w1)!;
    const useB = sharedReferenceOf(env.store, b, w2)!;
    const name = `${reference}@shared.1`;
    expect(await useA.reference.serve('/exports/a')).toBe(name);
    expect(await useB.reference.serve('/exports/b')).toBe(name);
    expect([...fake.adapters]).toEqual([[name, '/exports/a']]);

    // a ends on w1; b (on w2) still samples the reference.
    await useA.leave();
    await finishRun(env.store, a.id, { state: 'succeeded', reason: 'done' }, 'w1');
    expect(await unloadLeftReferences(env.store, 'gen', w1)).toEqual([]);
    expect([...fake.adapters.keys()]).toEqual([name]);
    await w2.sample({ prompt: [1], n: 1, maxTokens: 2, temperature: 1, topP: 1, model: name });

    // w2 dies (no leave, no unload); the sweep releases b and queues the adapter; the next run
    // on the endpoint, on w1, unloads it before it starts.
    await env.store.redis.del(keys(env.store.prefix).worker('w2'));
    expect(await releaseRunsOfLostWorkers(env.store, ['default'])).toEqual([
      { runId: b.id, workerId: 'w2' },
    ]);
    expect(await unloadLeftReferences(env.store, 'gen', w1)).toEqual([name]);
    expect([...fake.adapters.keys()]).toEqual([]);
    expect(fake.requestsTo('/v1/unload_lora_adapter').map((q) => q.body)).toEqual([
      { lora_name: name },
    ]);
  });
});
