// The GRPO train step against each trainer backend's own loss arithmetic (the Tinker fake's
// `skyrl-jax`, `skyrl-fsdp` and `tinker` reductions over the weights they receive, through the
// real HTTP client): the gradient each backend applies equals −∇J of docs/recipe.md §2 for
// rollouts with prompts and tool outputs of different lengths (docs/engines.md "Reduction").
import { TinkerTrainerEngine } from '@anneal/engines';
import { FakeTinkerServer, type AppliedGradient } from '@anneal/engines/testing';
import { validateRunSpec, type GrpoSpec } from '@anneal/protocol';
import { grpoObjectiveGradient } from '@anneal/rl';
import { afterEach, describe, expect, it } from 'vitest';
import { format, rollout } from '../../../test/executors/fakes.ts';
import { generatedLayout, generatedPosition } from './advantages.ts';
import { trainStep } from './train-step.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

const parsed = validateRunSpec({ kind: 'grpo' });
if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
const spec = parsed.value as GrpoSpec;

const gen = (n: number, logprob = -0.7) => ({
  tokens: Array.from({ length: n }, (_, k) => 97 + ((k * 5) % 23)),
  generated: true,
  logprob,
});
const tool = (n: number) => ({
  tokens: Array.from({ length: n }, (_, k) => 40 + (k % 9)),
  generated: false,
});

/** Two groups: prompts of 4 and 40 tokens, answers of 1–36 tokens, tool outputs of 0–30. */
function batch() {
  const short = format.encodePrompt('q?');
  const long = format.encodePrompt('which town lies north of the third river ford?');
  return {
    rollouts: [
      rollout(short, [gen(4)]),
      rollout(short, [gen(2), tool(30), gen(6, -1.1)]),
      rollout(short, [gen(36, -0.4)]),
      rollout(long, [gen(1), tool(12), gen(3)]),
      rollout(long, [gen(20, -0.9)]),
      rollout(long, [gen(2), tool(5), gen(2), tool(25), gen(9)]),
    ],
    advantages: [0.5, -1, 0.5, 0.8, -0.3, -0.5],
  };
}

/** −∇J per datum target position (0 off the generated tokens), at the fake's logπ. */
function minusObjectiveGradient(applied: AppliedGradient, inputs: ReturnType<typeof batch>) {
  const layout = generatedLayout(inputs.rollouts);
  const positions = layout.runs.map((runs, i) =>
    Array.from({ length: layout.offsets[i + 1]! - layout.offsets[i]! }, (_, k) =>
      generatedPosition(runs, k),
    ),
  );
  const logpTrain = new Float64Array(layout.logpInfer.length);
  positions.forEach((at, i) =>
    at.forEach((t, k) => (logpTrain[layout.offsets[i]! + k] = applied.logprobs[i]![t - 1]!)),
  );
  const gradient = grpoObjectiveGradient({
    logpTrain,
    logpInfer: Float64Array.from(layout.logpInfer),
    offsets: layout.offsets,
    advantages: inputs.advantages,
  });
  return inputs.rollouts.map((r, i) => {
    const out = new Array<number>(r.tokens.length - 1).fill(0);
    positions[i]!.forEach((t, k) => (out[t - 1] = -gradient[layout.offsets[i]! + k]!));
    return out;
  });
}

/** How much sequence i weighs in the applied gradient relative to −∇J (1 = exact). */
function sequenceWeights(applied: number[][], expected: number[][]): number[] {
  return applied.map((g, i) => {
    const e = expected[i]!;
    return g.reduce((s, v, t) => s + v * e[t]!, 0) / e.reduce((s, v) => s + v * v, 0);
  });
}

function cosine(a: number[][], b: number[][]): number {
  const x = a.flat();
  const y = b.flat();
  const dot = x.reduce((s, v, k) => s + v * y[k]!, 0);
  const norm = (v: number[]) => Math.sqrt(v.reduce((s, e) => s + e * e, 0));
  return dot / (norm(x) * norm(y));
}

describe.each([
  { backend: 'skyrl-jax', options: { flavor: 'skyrl' }, reduction: 'mean_per_sequence' },
  { backend: 'skyrl-fsdp', options: { flavor: 'skyrl', skyrlBackend: 'fsdp' }, reduction: 'sum' },
  { backend: 'tinker', options: { flavor: 'tinker' }, reduction: 'sum' },
] as const)('GRPO on the $backend loss arithmetic', ({ options, reduction }) => {
  it.each([128, 4])(
    'applies −∇J exactly: cosine 1, every sequence at weight 1 (≤ %i datums per request)',
    async (maxDatumsPerRequest) => {
      const fake = await FakeTinkerServer.start({ ...options, pendingPolls: 0 });
      open.push(fake);
      const engine = await TinkerTrainerEngine.connect({
        name: 'trainer',
        baseUrl: fake.url,
        capabilities: { kinds: ['grpo'], losses: ['importance_sampling'], reduction },
        maxDatumsPerRequest,
      });
      open.push(engine);
      const model = await engine.createModel({ baseModel: 'b', loraRank: 8 });
      const inputs = batch();
      await trainStep(model, {
        step: 1,
        ...inputs,
        is: spec.importanceSampling,
        reduction,
        adam: {
          learningRate: 1e-4,
          beta1: 0.9,
          beta2: 0.95,
          eps: 1e-12,
          weightDecay: 0,
          gradClipNorm: 0,
        },
      });
      const [step] = fake.appliedGradients(model.id);
      const expected = minusObjectiveGradient(step!, inputs);
      expect(cosine(step!.dLogp, expected)).toBeGreaterThan(1 - 1e-9);
      for (const w of sequenceWeights(step!.dLogp, expected)) expect(w).toBeCloseTo(1, 6);
      step!.dLogp.forEach((datum, i) =>
        datum.forEach((g, t) =>
          expect(Math.abs(g - expected[i]![t]!), `datum ${i} position ${t}`).toBeLessThan(1e-7),
        ),
      );
    },
  );
});
