// Reference generations shared by the runs of one process that use one shared reference
// (reference-cache.ts, docs/operations.md "Shared references"): a run finds the groups another
// run sampled for the same prompt and settings, its seeds do not depend on its own seed (runs on
// other workers sample the same), it does not bill a group another run sampled, and it samples a
// group itself when the other run's generation fails.
import { SearchWebTool, type RolloutEnv } from '@anneal/envs';
import { describe, expect, it } from 'vitest';
import { ScriptedInference, format } from '../../../test/executors/fakes.ts';
import type { SharedReferenceRollouts } from '../types.ts';
import { ReferenceCache } from './reference-cache.ts';
import type { StepPrompt } from './sample-prompts.ts';

const prompt = (id: string, text: string): StepPrompt => ({
  source: 'search-qa',
  example: { kind: 'qa', id, prompt: text, key: { answer: 'Paris', aliases: [] } },
  tokens: format.encodePrompt(text),
});
const [p1, p2] = [prompt('q1', 'Capital of X?'), prompt('q2', 'Capital of Y?')];

function envOf(engine: RolloutEnv['engine']): RolloutEnv {
  return {
    engine,
    format,
    tool: new SearchWebTool({ name: 'none', search: () => Promise.resolve([]) }),
    config: { maxContextTokens: 256, maxResponseTokens: 32, temperature: 1, topP: 1, model: 'r' },
  };
}

const sharedOf = (groups = new Map(), settings = 's'): SharedReferenceRollouts => ({
  seed: 1234,
  settings,
  groups,
  maxGroups: 8,
});

describe('reference generations shared across runs', () => {
  it("a run takes another run's group for the same prompt and settings, and does not bill it", async () => {
    const engine = new ScriptedInference((_, k) => `ref${k}`);
    const groups = new Map();
    const a = new ReferenceCache(envOf(engine), 1, true, sharedOf(groups));
    const b = new ReferenceCache(envOf(engine), 2, true, sharedOf(groups));
    const [fromA] = await a.forPrompts([p1], 2, 5);
    const [fromB, own] = await b.forPrompts([p1, p2], 2, 1);
    expect(engine.requests.map((r) => [...r.prompt])).toEqual([p1.tokens, p2.tokens]);
    expect(fromB!.rollouts).toBe(fromA!.rollouts);
    expect(fromA!.sampledAt).toBe(5);
    expect(fromB!.sampledAt).toBeLessThan(0); // billed by a, never by a step of b
    expect(own!.sampledAt).toBe(1);
    expect(b.stats()).toMatchObject({ hits: 1, misses: 1 });
    // Other settings (e.g. another temperature): a group of its own.
    const c = new ReferenceCache(envOf(engine), 1, true, sharedOf(groups, 'other'));
    await c.forPrompts([p1], 2, 1);
    expect(engine.requests).toHaveLength(3);
  });

  it('seeds depend on the reference and the prompt, not on the run', async () => {
    const seeds = async (runSeed: number) => {
      const engine = new ScriptedInference(() => 'x');
      await new ReferenceCache(envOf(engine), runSeed, true, sharedOf()).forPrompts([p1], 2, 1);
      return engine.requests.map((r) => r.seed);
    };
    expect(await seeds(1)).toEqual(await seeds(2));
    const unshared = async (runSeed: number) => {
      const engine = new ScriptedInference(() => 'x');
      await new ReferenceCache(envOf(engine), runSeed, true).forPrompts([p1], 2, 1);
      return engine.requests.map((r) => r.seed);
    };
    expect(await unshared(1)).not.toEqual(await unshared(2));
  });

  it("samples the group itself when the other run's generation fails; keeps the shared cache bounded", async () => {
    const groups = new Map();
    const failing = {
      sample: () => Promise.reject(new Error('run a was cancelled')),
      loadWeights: () => Promise.resolve(),
      close: () => Promise.resolve(),
    };
    const a = new ReferenceCache(envOf(failing), 1, true, sharedOf(groups));
    const engine = new ScriptedInference((_, k) => `ref${k}`);
    const b = new ReferenceCache(envOf(engine), 2, true, sharedOf(groups));
    const fromA = a.forPrompts([p1], 2, 1);
    const fromB = b.forPrompts([p1], 2, 3); // finds a's generation in flight
    await expect(fromA).rejects.toThrow(/cancelled/);
    const [group] = await fromB;
    expect(group!.rollouts.map((r) => r.answer)).toEqual(['ref0', 'ref1']);
    expect(group!.sampledAt).toBe(3);
    expect(engine.requests).toHaveLength(1);
    const many = Array.from({ length: 12 }, (_, i) => prompt(`m${i}`, `Question ${i}?`));
    await b.forPrompts(many, 2, 4);
    expect(groups.size).toBe(8);
  });
});
