// GRPO through the REST API (control plane + worker in process) against the Tinker fake with
// SkyRL-JAX semantics (docs/engines.md "Conformance"): its loss arithmetic divides each datum by
// the sum of the weights it receives and averages over datums, and its own sampler loads a
// sampled checkpoint into the adapter slot being trained (SkyRL a9564572e, skyrl/backends/jax.py).
// The rollouts are scripted by the test — prompts of different lengths, 0–3 tool calls, right
// and wrong answers — so R_i, Â_i and the generated tokens are known here independently of the
// worker, and the gradient the fake applied is compared with −∇J of docs/recipe.md §2.
import { createHash } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningControlPlane } from '@anneal/control-plane';
import { ByteTokenizer, type TinkerWire } from '@anneal/engines';
import { FakeTinkerServer, type AppliedGradient } from '@anneal/engines/testing';
import { createToolCallFormat } from '@anneal/envs';
import { parseOperatorConfig } from '@anneal/protocol';
import { type InProcessStack, restClient, startInProcessStack } from './in-process-stack.ts';

const TOKEN = 'trainer-conformance-operator-token-0123';
const format = createToolCallFormat(new ByteTokenizer());
const { ids } = format;

/** Questions of 1 to 12 words: prompts from 9 to ~70 tokens. */
const QA = [
  { question: 'Zorp?', answer: 'blue' },
  { question: 'Which river runs past the old mill of Tarnholt?', answer: 'Ember' },
  {
    question:
      'In the chronicle of the northern lands, who founded the town that lies beyond the third ford?',
    answer: 'Quill',
  },
];

const GROUP_SIZE = 4;

/** Rollout plan from its first-segment seed (seed + k: one of each per group of 4): tool calls
 * before answering, and whether the answer is right. */
const PLANS = [
  { calls: 0, right: true },
  { calls: 1, right: false },
  { calls: 2, right: true },
  { calls: 3, right: false },
];

interface Sampled {
  prompt: string;
  tokens: number[];
  logprobs: number[];
}

/** The scripted sampler: the first turn picks a plan (written into the call's query, so later
 * turns read it back from the prompt), each later turn calls again or answers. */
function scriptedSampler(record: Sampled[]) {
  return (request: TinkerWire.AsampleRequest): TinkerWire.SampleResponse => {
    const prompt = request.prompt.chunks.flatMap((c) => c.tokens);
    const text = format.tokenizer.decode(prompt);
    const question = text.slice(text.indexOf('<|user|>') + 8, text.indexOf('<|assistant|>'));
    const qa = QA.find((q) => q.question === question);
    if (qa === undefined) throw new Error(`unscripted prompt: ${text}`);
    const planned = /plan (\d)/.exec(text);
    const plan = PLANS[planned ? Number(planned[1]) : (request.sampling_params.seed ?? 0) % 4]!;
    const planIndex = PLANS.indexOf(plan);
    const done = text.split('<|result|>').length - 1;
    const tokens =
      done < plan.calls
        ? [
            ids.callStart,
            ...format.tokenizer.encode(`plan ${planIndex} ${qa.answer} ${done}`),
            ids.callEnd,
          ]
        : [
            ids.answer,
            ...format.tokenizer.encode(plan.right ? qa.answer : 'no idea at all'),
            ids.eos,
          ];
    const logprobs = tokens.map((_, i) => -0.3 - 0.05 * ((i + planIndex) % 7));
    record.push({ prompt: prompt.join(','), tokens, logprobs });
    return {
      sequences: [{ tokens, logprobs, stop_reason: 'stop' }],
      prompt_logprobs: null,
    };
  };
}

/** What the test knows of one trained datum: generated positions (datum target indices), their
 * sampling logprobs, and the reward of its answer. */
function readDatum(datum: TinkerWire.Datum, record: readonly Sampled[]) {
  const input = datum.model_input.chunks.flatMap((c) => c.tokens);
  const targets = datum.loss_fn_inputs['target_tokens']!.data;
  const tokens = [...input, targets[targets.length - 1]!];
  const generated = new Map<number, number>(); // datum position (t − 1) -> μ logprob
  let at = tokens.indexOf(ids.assistant) + 1;
  for (;;) {
    const prefix = tokens.slice(0, at).join(',');
    const segment = record.find(
      (r) => r.prompt === prefix && r.tokens.every((tok, k) => tokens[at + k] === tok),
    );
    if (segment === undefined) throw new Error(`no sampled segment at ${at}`);
    segment.tokens.forEach((_, k) => generated.set(at + k - 1, segment.logprobs[k]!));
    at += segment.tokens.length;
    if (segment.tokens[0] === ids.answer) break;
    at = tokens.indexOf(ids.resultEnd, at) + 1; // the tool output, not sampled
  }
  const text = format.tokenizer.decode(tokens);
  const qa = QA.find((q) => text.includes(`<|user|>${q.question}<|assistant|>`))!;
  const answer = text.slice(text.lastIndexOf('<|answer|>') + 10, text.lastIndexOf('<|eos|>'));
  return {
    question: qa.question,
    promptTokens: tokens.indexOf(ids.assistant) + 1,
    tokens: tokens.length,
    generated,
    reward: answer === qa.answer ? 1 : 0,
  };
}

/** −∇J per datum target position and the backend gradient's cosine with it and per-sequence
 * weights (1 = sequence i enters as J says). J = 1/N Σ_i Â_i/|o_i| Σ_t r_t, Â_i = R_i − mean_g R. */
function compare(step: AppliedGradient, record: readonly Sampled[]) {
  const datums = step.data.map((d) => readDatum(d, record));
  const n = datums.length;
  const expected = datums.map((d, i) => {
    const g = Math.floor(i / GROUP_SIZE); // groups are concatenated in the step's batch
    const group = datums.slice(g * GROUP_SIZE, (g + 1) * GROUP_SIZE);
    expect(group.every((o) => o.question === d.question)).toBe(true);
    const advantage = d.reward - group.reduce((s, o) => s + o.reward, 0) / group.length;
    const out = new Array<number>(step.dLogp[i]!.length).fill(0);
    for (const [t, mu] of d.generated) {
      const ratio = Math.exp(step.logprobs[i]![t]! - mu);
      out[t] = -(advantage * ratio) / (n * d.generated.size);
    }
    return out;
  });
  const x = step.dLogp.flat();
  const y = expected.flat();
  const dot = (a: number[], b: number[]) => a.reduce((s, v, k) => s + v * b[k]!, 0);
  return {
    datums,
    expected,
    cosine: dot(x, y) / Math.sqrt(dot(x, x) * dot(y, y)),
    weights: step.dLogp.map((g, i) => {
      const e = expected[i]!;
      return dot(e, e) === 0 ? null : dot(g, e) / dot(e, e);
    }),
  };
}

interface Stack extends InProcessStack {
  trainer: FakeTinkerServer;
  dir: string;
}
let stack: Stack | undefined;

afterEach(async () => {
  const closing = stack;
  stack = undefined;
  await closing?.close();
});

async function start(backend: 'skyrl-jax' | 'skyrl-fsdp', record: Sampled[]): Promise<Stack> {
  const dir = await mkdtemp(path.join(tmpdir(), 'anneal-conformance-'));
  const data = path.join(dir, 'qa.jsonl');
  await writeFile(data, QA.map((q) => JSON.stringify(q)).join('\n') + '\n');
  const trainer = await FakeTinkerServer.start({
    flavor: 'skyrl',
    skyrlBackend: backend === 'skyrl-jax' ? 'jax' : 'fsdp',
    pendingPolls: 0,
    sampler: scriptedSampler(record),
  });
  const reduction = backend === 'skyrl-jax' ? 'mean_per_sequence' : 'sum';
  const parsed = parseOperatorConfig(`
pools: { default: { slots: 1 } }
inference:
  own: { type: tinker, url: "${trainer.url}" }
trainers:
  skyrl:
    type: tinker
    url: ${trainer.url}
    backend: ${backend}
    capabilities: { kinds: [grpo], losses: [importance_sampling], reduction: ${reduction} }
search: { local: { type: local } }
datasets:
  mixed: { kind: qa, path: "${data}" }
baseModels:
  qwen: { model: Qwen/Qwen3-30B-A3B-Instruct-2507, tokenizer: byte }
defaults: { pool: default, inference: own, trainer: skyrl, search: local, baseModel: qwen }
tenants: { acme: {} }
tokens:
  - { name: op, sha256: "${createHash('sha256').update(TOKEN).digest('hex')}", role: operator, tenant: acme }
`);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const operator = parsed.value;
  const started = await startInProcessStack({
    operator,
    name: `conformance-${backend}`,
    dir,
    engines: [trainer],
  });
  stack = { ...started, trainer, dir };
  return stack;
}

const api = <T>(plane: RunningControlPlane, method: string, url: string, body?: string) =>
  restClient(plane, TOKEN).api<T>(method, url, body);
const finished = (plane: RunningControlPlane, id: string) => restClient(plane, TOKEN).finished(id);

const grpo = (lag: number) => `kind: grpo
steps: 2
checkpointInterval: 2
data: { mix: [{ source: mixed, weight: 1 }] }
rollout: { groupSize: 4, promptsPerStep: 3, maxTokens: 120, temperature: 1, maxPolicyLag: ${lag} }
reward: { lambdaTool: 0, lambdaLen: 0 }
`;

describe('GRPO on SkyRL JAX through its own sampler (REST API, faithful fake)', () => {
  it('applies exactly −∇J for mixed prompt and tool-output lengths, and never overwrites the policy', async () => {
    const record: Sampled[] = [];
    const { plane, trainer } = await start('skyrl-jax', record);
    const submitted = await api<{ id: string }>(plane, 'POST', '/v1/runs', grpo(0));
    expect(submitted.status).toBe(201);
    const run = await finished(plane, submitted.body.id);
    expect(run, JSON.stringify(run)).toMatchObject({ state: 'succeeded' });

    // The policy is the model that trained; the reference is a model of its own (never trained).
    const trained = [...trainer.models.keys()].filter((id) => trainer.appliedGradients(id).length);
    expect(trained).toHaveLength(1);
    const policy = trained[0]!;
    expect(trainer.models.size).toBe(2);
    // No sampling request replaced the weights being trained.
    expect(trainer.overwrites).toEqual([]);
    expect(trainer.trainedSteps(policy)).toBe(2);

    const steps = trainer.appliedGradients(policy);
    expect(steps).toHaveLength(2);
    for (const step of steps) {
      const { datums, cosine, weights } = compare(step, record);
      expect(datums).toHaveLength(12);
      // the batch mixes prompt lengths, tool outputs and rewards
      expect(new Set(datums.map((d) => d.promptTokens)).size).toBeGreaterThan(1);
      expect(
        new Set(datums.map((d) => d.tokens - d.promptTokens - d.generated.size)).size,
      ).toBeGreaterThan(2);
      expect(cosine).toBeGreaterThan(1 - 1e-9);
      for (const w of weights) expect(w).toBeCloseTo(1, 6);
    }
  }, 120_000);

  it('refuses older policy versions on this sampler at submission, naming the pairing', async () => {
    const { plane } = await start('skyrl-jax', []);
    const submitted = await api<{ code: string; errors: Array<{ path: string; message: string }> }>(
      plane,
      'POST',
      '/v1/runs',
      grpo(1),
    );
    expect(submitted.status).toBe(400);
    expect(submitted.type).toMatch(/^application\/problem\+json/);
    expect(submitted.body.code).toBe('ANNEAL_ERR_TRAINER_CAPABILITY');
    expect(submitted.body.errors).toEqual([
      expect.objectContaining({
        path: '/rollout/maxPolicyLag',
        message: expect.stringMatching(
          /^inference endpoint 'own' samples through trainer endpoint 'skyrl' \(backend skyrl-jax\), whose sampler loads a sampled checkpoint into the adapter slot being trained.*Set rollout.maxPolicyLag 0, or sample from a vLLM inference endpoint/,
        ),
      }),
    ]);
  }, 60_000);
});
