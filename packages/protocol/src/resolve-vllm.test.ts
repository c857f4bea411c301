// Submission checks of a GRPO run against its vLLM endpoint: the policy's LoRA rank against the
// replicas' --max-lora-rank (vLLM's default 16 < Anneal's default rank 32), and trainer backends
// whose sampler sync runs their own inference engines (sampler-pairing.ts).
import { describe, expect, it } from 'vitest';
import { localOperatorConfig, validateOperatorConfig } from './operator-config-parse.ts';
import { vllmRankIssue, vllmWeightsFormatIssue } from './operator-config-vllm.ts';
import { resolveRunSpec } from './resolve.ts';
import { parseRunSpec, type RunSpec } from './run-spec/index.ts';

function spec(text: string): RunSpec {
  const result = parseRunSpec(text);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.value;
}

const local = localOperatorConfig('b'.repeat(64));

function withVllm(vllm: Record<string, unknown>, backend?: string) {
  const parsed = validateOperatorConfig({
    ...local,
    inference: {
      ...local.inference,
      gen: {
        type: 'vllm',
        replicas: ['http://gpu-1:8000'],
        logprobsMode: 'processed_logprobs',
        ...vllm,
      },
    },
    trainers: {
      ...local.trainers,
      remote: {
        type: 'tinker',
        url: 'http://trainer:8000',
        capabilities: {
          kinds: ['sft', 'grpo'],
          losses: ['cross_entropy', 'importance_sampling'],
        },
        ...(backend && { backend }),
      },
    },
    defaults: { ...local.defaults, inference: 'gen', trainer: 'remote' },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

describe('vLLM endpoint checks at submission', () => {
  it('refuses a LoRA rank above the endpoint maxLoraRank (default 16), naming /lora/rank', () => {
    const result = resolveRunSpec(spec('kind: grpo'), withVllm({})); // lora.rank defaults to 32
    expect(result.ok).toBe(false);
    expect(result.errors).toEqual([
      {
        path: '/lora/rank',
        reason: 'capability',
        message:
          "inference endpoint 'gen' loads LoRA adapters up to rank 16 (vLLM --max-lora-rank) but " +
          'the weights have rank 32: set lora.rank <= 16, or restart vLLM with --max-lora-rank ' +
          ">= 32 and set the endpoint's maxLoraRank",
      },
    ]);
  });

  it('accepts the rank when the endpoint declares a high enough maxLoraRank, or the run lowers it', () => {
    const high = resolveRunSpec(spec('kind: grpo'), withVllm({ maxLoraRank: 64 }));
    expect(high.errors).toBeUndefined();
    expect(resolveRunSpec(spec('kind: grpo\nlora: {rank: 16}'), withVllm({})).ok).toBe(true);
    // Not a vLLM run: sft trains without sampling.
    expect(resolveRunSpec(spec('kind: sft'), withVllm({})).ok).toBe(true);
  });

  it('refuses skyrl-fsdp for a vLLM endpoint for its sampler sync, not its export format', () => {
    // skyrl_train_backend.py@a9564572e save_sampler_checkpoint: _ensure_inference_engines() and
    // an NCCL broadcast before fsdp_strategy.py save_hf_model writes the PEFT adapter
    const result = resolveRunSpec(spec('kind: grpo'), withVllm({ maxLoraRank: 64 }, 'skyrl-fsdp'));
    expect(result.errors?.map((e) => [e.path, e.reason])).toEqual([
      ['/endpoints/inference', 'capability'],
    ]);
    const message = result.errors?.[0]?.message ?? '';
    expect(message).toContain("trainer endpoint 'remote' (backend skyrl-fsdp) cannot feed");
    expect(message).toContain("starts skyrl-fsdp's own colocated inference engines");
    expect(message).toContain('its exports are LoRA adapters vLLM could load');
    expect(message).not.toContain('full model');
    expect(resolveRunSpec(spec('kind: grpo'), withVllm({ maxLoraRank: 64 }, 'tinker')).ok).toBe(
      true,
    );
  });

  it('parses maxLoraRank, naming the field of a bad value', () => {
    expect(withVllm({ maxLoraRank: 32 }).inference['gen']).toMatchObject({ maxLoraRank: 32 });
    const bad = validateOperatorConfig({
      ...local,
      inference: { gen: { type: 'vllm', replicas: ['http://gpu-1:8000'], maxLoraRank: 0 } },
    });
    expect(bad.ok).toBe(false);
    expect(bad.ok ? [] : bad.errors.map((e) => e.path)).toContain('/inference/gen/maxLoraRank');
  });

  it('pure checks: at or below the limit is fine; LoRA weights always load', () => {
    expect(vllmRankIssue({ name: 'g' }, 16)).toBeUndefined();
    expect(vllmRankIssue({ name: 'g', maxLoraRank: 8 }, 16)).toContain('up to rank 8');
    expect(vllmWeightsFormatIssue({ name: 'g' }, 'lora')).toBeUndefined();
  });

  it('pairs ONNX exports (backend embedded) with the embedded sampler server only, for grpo and eval', () => {
    const grpo = spec('kind: grpo'); // lora.rank 32: no rank limit on ONNX weight sets
    const onVllm = resolveRunSpec(grpo, withVllm({ maxLoraRank: 32 }, 'embedded'));
    expect(onVllm.errors).toEqual([
      {
        path: '/endpoints/inference',
        reason: 'capability',
        message:
          "trainer endpoint 'remote' exports the embedded model's ONNX weight sets, which vLLM " +
          'cannot load as LoRA adapters: serve them with `anneal serve sampler` and declare ' +
          "inference endpoint 'gen' with server: anneal-embedded (docs/engines.md \"Embedded " +
          'sampler server")',
      },
    ]);
    const embedded = withVllm({ server: 'anneal-embedded' }, 'embedded');
    expect(resolveRunSpec(grpo, embedded).errors).toBeUndefined();
    // The embedded sampler loads ONNX exports alone: a LoRA-exporting or undeclared backend is refused.
    for (const [backend, what] of [
      ['tinker', 'exports LoRA adapters'],
      [undefined, 'declares no backend (declare backend: embedded'],
    ] as const) {
      const result = resolveRunSpec(grpo, withVllm({ server: 'anneal-embedded' }, backend));
      expect(result.errors?.map((e) => [e.path, e.message.includes(what)])).toEqual([
        ['/endpoints/inference', true],
      ]);
    }
    // The in-worker embedded trainer exports ONNX too: accepted beside the embedded sampler.
    const inWorker = spec('kind: grpo\nendpoints: {trainer: embedded}');
    expect(Object.keys(local.trainers)).toContain('embedded');
    expect(resolveRunSpec(inWorker, embedded).errors).toBeUndefined();
    // eval exports through its trainer too (its config declares eval here).
    const evalConfig = withVllm({}, 'embedded');
    const remote = evalConfig.trainers['remote'];
    if (remote?.type !== 'tinker') throw new Error('remote is a tinker trainer');
    remote.capabilities.kinds.push('eval');
    const evaluation = spec('kind: eval\nendpoints: {trainer: remote}');
    expect(resolveRunSpec(evaluation, evalConfig).errors?.map((e) => e.path)).toEqual([
      '/endpoints/inference',
    ]);
  });
});
