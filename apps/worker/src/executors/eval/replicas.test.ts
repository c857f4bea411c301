// An eval cell over an inference endpoint with two replicas (docs/evaluation.md "Replicas"):
// the cell sends all its questions at once (runRollouts), and the vLLM engine routes each
// request to the admitted replica with the fewest in flight, so both replicas serve the cell
// concurrently. Real HTTP to two fake vLLM servers.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ByteTokenizer, VllmInferenceEngine } from '@anneal/engines';
import { FakeVllmServer } from '@anneal/engines/testing';
import { validateRunSpec } from '@anneal/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../../../test/helpers.ts';
import { defaultDataCatalog } from '../../resources/data/builtin-catalog.ts';
import { runEval } from './index.ts';
import { memoryContext, specOfKind } from '../../../test/executors/fakes.ts';

const EXAMPLES = 16;
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

describe('an eval cell over two inference replicas', () => {
  it('spreads its requests over both, in flight at the same time', async () => {
    const fakes = await Promise.all(
      [0, 1].map(() =>
        FakeVllmServer.start({
          checkAdapterFiles: false,
          stopAfter: 4,
          // Ids the run's tokenizer knows, as a real server samples from its model's vocabulary
          // (the rollout loop decodes every turn).
          vocabSize: new ByteTokenizer().vocabSize,
        }),
      ),
    );
    const engine = new VllmInferenceEngine({
      name: 'vllm-pool',
      replicas: fakes.map((f) => f.url),
      model: 'base-model',
      healthCheckIntervalMs: 0,
    });
    const dir = await mkdtemp(path.join(os.tmpdir(), 'anneal-eval-replicas-'));
    open.push(engine, ...fakes, { close: () => rm(dir, { recursive: true, force: true }) });
    const parsed = validateRunSpec({
      kind: 'eval',
      datasets: ['search-qa'],
      examples: EXAMPLES,
      budgets: { toolCallBudgets: [0], maxOutputTokens: 8 },
    });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const target = { label: 'ckpt', baseModel: 'tiny', checkpoint: null, samplerPath: dir };
    const ctx = memoryContext(specOfKind('eval', parsed.value), {
      tokenizer: new ByteTokenizer(),
      inference: engine,
      trainer: undefined as never, // the target has a sampler export: no trainer is asked
      model: target,
      data: defaultDataCatalog(),
    });
    ctx.artifactDir = dir;

    const holds = fakes.map((f) => f.holdCompletions());
    const run = runEval(ctx);
    // Every question of the cell waits on a replica at once: both serve, concurrently.
    await eventually(
      () => holds.reduce((n, h) => n + h.waiting(), 0) === EXAMPLES,
      10_000,
      'all requests of the cell in flight',
    );
    expect(holds.map((h) => h.waiting())).toEqual([EXAMPLES / 2, EXAMPLES / 2]);
    for (const h of holds) h.release();
    await run;
    const served = fakes.map((f) => f.requestsTo('/v1/completions'));
    expect(served.map((r) => r.length)).toEqual([EXAMPLES / 2, EXAMPLES / 2]);
    // Both replicas sampled the served checkpoint (its adapter was loaded on each).
    for (const requests of served) {
      expect(new Set(requests.map((r) => (r.body as { model: string }).model)).size).toBe(1);
    }
    // An eval's answers are graded, never trained on: no request asks for sampling logprobs.
    expect(served.flat().every((r) => !('logprobs' in (r.body as object)))).toBe(true);
    expect(ctx.steps.get(1)!['examples']).toBe(EXAMPLES);
  });
});
