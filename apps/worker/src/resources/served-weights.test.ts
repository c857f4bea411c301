// A run's view of the shared inference engine admits only the run's own adapter names
// (docs/security.md "Isolation between runs").
import type { InferenceEngine, SampleRequest } from '@anneal/engines';
import { describe, expect, it } from 'vitest';
import { trackServedWeights } from './served-weights.ts';

function recordingEngine() {
  const calls: string[] = [];
  const engine: InferenceEngine = {
    sample: async (request) => {
      calls.push(`sample ${request.model ?? '(base)'}`);
      return [];
    },
    loadWeights: async (weights) => {
      calls.push(`load ${weights.name}`);
    },
    releaseWeights: async (name) => {
      calls.push(`release ${name}`);
    },
    close: async () => undefined,
  };
  return { engine, calls };
}

const request = (model?: string): SampleRequest => ({
  prompt: [1],
  n: 1,
  maxTokens: 4,
  temperature: 1,
  topP: 1,
  ...(model !== undefined && { model }),
});

describe("a run's view of a shared inference engine", () => {
  it("loads and samples the run's own names and the base model", async () => {
    const { engine, calls } = recordingEngine();
    const served = trackServedWeights(engine, 'run_a');
    await served.engine.loadWeights({ name: 'run_a-policy', path: '/p' });
    await served.engine.sample(request('run_a-policy'));
    await served.engine.sample(request());
    expect(calls).toEqual(['load run_a-policy', 'sample run_a-policy', 'sample (base)']);
  });

  it("refuses another run's adapter, for a request and for a load, before the engine sees it", async () => {
    const { engine, calls } = recordingEngine();
    const served = trackServedWeights(engine, 'run_a');
    await expect(served.engine.sample(request('run_ab-policy'))).rejects.toThrow(
      "run run_a: a rollout request names 'run_ab-policy', which is not one of this run's adapter names",
    );
    await expect(served.engine.loadWeights({ name: 'run_b-policy', path: '/p' })).rejects.toThrow(
      "run run_a: weights are loaded as 'run_b-policy'",
    );
    expect(calls).toEqual([]);
    expect(served.names()).toEqual([]);
  });

  it('samples the shared reference it holds once served, never another one, and never releases it', async () => {
    const { engine, calls } = recordingEngine();
    const shared: { adapter?: string } = {};
    const served = trackServedWeights(engine, 'run_a', () => shared.adapter);
    const mine = 'ref-0123456789abcdef@shared.1';
    await expect(served.engine.sample(request(mine))).rejects.toThrow(/not one of this run/);
    shared.adapter = mine;
    await served.engine.sample(request(mine));
    await expect(served.engine.sample(request('ref-fedcba9876543210@shared.1'))).rejects.toThrow(
      /not one of this run/,
    );
    await served.release();
    expect(calls).toEqual([`sample ${mine}`]);
  });
});
