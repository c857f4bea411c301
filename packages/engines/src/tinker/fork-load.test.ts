// A fork loads weights only; a resume restores the optimizer too — through the Tinker client
// against the fake trainer, which keeps each model's weights and Adam state and restores them as
// SkyRL does (test/tinker/fake-optimizer.ts cites skyrl/tinker/api.py and skyrl/backends/jax.py
// @a9564572eb8e91076be43c1bd5e4615e3de17265 and the tinker SDK's training_client.py
// @097e108902ffa80ab04240773e8d7e23347e2df5: `load_state` sends optimizer false,
// `load_state_with_optimizer` true).
import { afterEach, describe, expect, it } from 'vitest';
import { adam, startTinker } from '../../test/tinker-harness.ts';
import type { FakeTinkerOptions } from '../../test/tinker/fake-server.ts';
import type { Datum } from '../types.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

/** An importance-sampling datum whose generated targets carry `advantage`. */
function isDatum(advantage: number, tokens = [1, 2, 3, 4]): Datum {
  return {
    modelInput: [9, ...tokens.slice(0, 3)],
    lossFnInputs: {
      target_tokens: Int32Array.from(tokens),
      logprobs: Float32Array.from([0, 0, -0.5, -0.5]),
      advantages: Float32Array.from([0, 0, advantage, advantage]),
      weights: Float32Array.from([0, 0, 1, 1]),
    },
  };
}

const step = { ...adam, learningRate: 1e-2 };

describe.each<FakeTinkerOptions>([{ flavor: 'skyrl' }, { flavor: 'tinker' }])(
  'loadWeights on the fake %o',
  (server) => {
    /** A parent trained 3 steps (non-zero moments), its checkpoint, and the fake. */
    async function parent() {
      const { fake, engine } = await startTinker(open, server);
      const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
      for (const a of [1, -0.5, 2]) {
        await model.forwardBackward([isDatum(a), isDatum(a, [5, 6, 7, 3])], 'importance_sampling');
        await model.optimStep(step);
      }
      const path = await model.saveWeights('parent-3');
      const saved = fake.models.get(model.id)!.savedTraining.get('parent-3')!;
      expect(saved.step).toBe(3);
      expect(Array.from(saved.m).some((m) => m !== 0)).toBe(true);
      return { fake, engine, path, saved };
    }

    it('a fork (optimizer: false) whose advantages are all 0 keeps the parent weights bit for bit', async () => {
      const { fake, engine, path, saved } = await parent();
      const fork = await engine.createModel({ baseModel: 'b', loraRank: 8 });
      await fork.loadWeights(path, { optimizer: false });
      expect(fake.requestsTo('load_weights').at(-1)).toMatchObject({ path, optimizer: false });
      for (let n = 0; n < 4; n++) {
        await fork.forwardBackward([isDatum(0), isDatum(0, [5, 6, 7, 3])], 'importance_sampling');
        await fork.optimStep(step);
      }
      const state = fake.models.get(fork.id)!.training;
      expect(Array.from(state.params)).toEqual(Array.from(saved.params));
      expect(state.step).toBe(4); // counted from 0, not from the parent's 3
    });

    it("a fork asking for the parent's optimizer (optimizer: true) moves with its moments", async () => {
      const { fake, engine, path, saved } = await parent();
      const fork = await engine.createModel({ baseModel: 'b', loraRank: 8 });
      await fork.loadWeights(path, { optimizer: true });
      await fork.forwardBackward([isDatum(0)], 'importance_sampling');
      await fork.optimStep(step);
      const state = fake.models.get(fork.id)!.training;
      expect(state.step).toBe(4);
      const moved = Array.from(state.params).filter((p, k) => p !== saved.params[k]);
      expect(moved.length).toBeGreaterThan(0);
    });

    it('a resume (optimizer: true) continues exactly as the uninterrupted model', async () => {
      const { fake, engine, path } = await parent();
      const original = [...fake.models.values()][0]!;
      const resumed = await engine.createModel({ baseModel: 'b', loraRank: 8 });
      await resumed.loadWeights(path, { optimizer: true });
      const restored = fake.models.get(resumed.id)!.training;
      expect(Array.from(restored.m)).toEqual(Array.from(original.training.m));
      expect(Array.from(restored.v)).toEqual(Array.from(original.training.v));
      expect(restored.step).toBe(3);
    });
  },
);
