// GRPO sampling settings the endpoints can match (capabilities.ts, docs/engines.md "Logprobs and
// temperature"): refused at submission with the field to change and the reason.
import { describe, expect, it } from 'vitest';
import {
  grpoSamplingIssues,
  reportedLogprobsMode,
  trainerScoresAtTemperature,
} from './capabilities.ts';
import type {
  InferenceEndpointConfig,
  LogprobsMode,
  TrainerEndpointConfig,
} from './operator-config.ts';
import { localOperatorConfig, validateOperatorConfig } from './operator-config-parse.ts';
import { resolveRunSpec } from './resolve.ts';
import { parseRunSpec, type RunSpec } from './run-spec/index.ts';

const caps = {
  kinds: ['grpo' as const],
  losses: ['importance_sampling' as const],
  reduction: 'sum' as const,
};
const tinker: TrainerEndpointConfig = {
  type: 'tinker',
  url: 'http://trainer:8000',
  capabilities: caps,
};
const embeddedTrainer: TrainerEndpointConfig = { type: 'embedded', capabilities: caps };
const vllm = (logprobsMode?: LogprobsMode): InferenceEndpointConfig => ({
  type: 'vllm',
  replicas: ['http://vllm:8000'],
  ...(logprobsMode && { logprobsMode }),
});
const at = (temperature: number, topP = 1, allowTopPBias = false) => ({
  temperature,
  topP,
  allowTopPBias,
});
const paths = (issues: { path: string }[]) => issues.map((i) => i.path);

describe('grpoSamplingIssues', () => {
  it('accepts T = 1, top-p 1 on every trainer and on vLLM with its default raw logprobs', () => {
    expect(
      grpoSamplingIssues(at(1), { name: 't', config: tinker }, { name: 'v', config: vllm() }),
    ).toEqual([]);
  });

  it('accepts T ≠ 1 when the trainer scores at T and the sampler reports processed logprobs', () => {
    const trainer = { name: 'e', config: embeddedTrainer };
    expect(
      grpoSamplingIssues(at(0.6), trainer, { name: 'v', config: vllm('processed_logprobs') }),
    ).toEqual([]);
    expect(
      grpoSamplingIssues(at(0.6), trainer, { name: 'x', config: { type: 'embedded' } }),
    ).toEqual([]);
  });

  it('refuses T ≠ 1 on a Tinker-API trainer, naming rollout.temperature and the reason', () => {
    const issues = grpoSamplingIssues(at(0.6), { name: 'skyrl', config: tinker }, undefined);
    expect(paths(issues)).toEqual(['/rollout/temperature']);
    expect(issues[0]!.message).toMatch(
      /trainer endpoint 'skyrl' \(type tinker\) scores π_train at temperature 1 only/,
    );
  });

  it('refuses T ≠ 1 on a vLLM endpoint declared raw_logprobs (the default)', () => {
    const trainer = { name: 'e', config: embeddedTrainer };
    const issues = grpoSamplingIssues(at(0.6), trainer, { name: 'v', config: vllm() });
    expect(paths(issues)).toEqual(['/rollout/temperature']);
    expect(issues[0]!.message).toMatch(
      /logprobsMode raw_logprobs.*--logprobs-mode processed_logprobs/,
    );
  });

  it('refuses logits modes whatever the temperature', () => {
    const issues = grpoSamplingIssues(at(1), undefined, {
      name: 'v',
      config: vllm('processed_logits'),
    });
    expect(paths(issues)).toEqual(['/endpoints/inference']);
  });

  it('refuses top-p < 1 unless the spec accepts the bias', () => {
    const issues = grpoSamplingIssues(at(1, 0.9), undefined, undefined);
    expect(paths(issues)).toEqual(['/rollout/topP']);
    expect(issues[0]!.message).toMatch(/allowTopPBias/);
    expect(grpoSamplingIssues(at(1, 0.9, true), undefined, undefined)).toEqual([]);
  });

  it('refuses greedy decoding', () => {
    expect(paths(grpoSamplingIssues(at(0), undefined, undefined))).toEqual([
      '/rollout/temperature',
    ]);
  });

  it('reads what each endpoint reports and which trainer scores at T', () => {
    expect(reportedLogprobsMode({ type: 'embedded' })).toBe('processed_logprobs');
    expect(reportedLogprobsMode(vllm())).toBe('raw_logprobs');
    expect(trainerScoresAtTemperature(embeddedTrainer)).toBe(true);
    expect(trainerScoresAtTemperature(tinker)).toBe(false);
  });
});

function spec(text: string): RunSpec {
  const result = parseRunSpec(text);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.value;
}

describe('resolveRunSpec refuses GRPO sampling the endpoints cannot match', () => {
  const local = localOperatorConfig('b'.repeat(64));
  const parsed = validateOperatorConfig({
    ...local,
    trainers: { ...local.trainers, skyrl: tinker },
    inference: {
      ...local.inference,
      // maxLoraRank 32: the default lora.rank fits (resolve-vllm.test.ts covers the rank check).
      vllm: { type: 'vllm', replicas: ['http://vllm:8000'], maxLoraRank: 32 },
      vllmp: {
        type: 'vllm',
        replicas: ['http://vllm:8000'],
        logprobsMode: 'processed_logprobs',
        maxLoraRank: 32,
      },
    },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const config = parsed.value;

  it('declared logprobsMode defaults to raw_logprobs, like vLLM', () => {
    const entry = config.inference['vllm'];
    expect(entry?.type === 'vllm' && entry.logprobsMode).toBe('raw_logprobs');
  });

  it('as capability errors naming the field', () => {
    const onTinker = resolveRunSpec(
      spec(
        'kind: grpo\nrollout: {temperature: 0.6}\nendpoints: {trainer: skyrl, inference: vllmp}',
      ),
      config,
    );
    expect(onTinker.errors?.map((e) => [e.reason, e.path])).toEqual([
      ['capability', '/rollout/temperature'],
    ]);
    const raw = resolveRunSpec(
      spec('kind: grpo\nrollout: {temperature: 0.6}\nendpoints: {inference: vllm}'),
      config,
    );
    expect(raw.errors?.map((e) => [e.reason, e.path])).toEqual([
      ['capability', '/rollout/temperature'],
    ]);
    const topP = resolveRunSpec(spec('kind: grpo\nrollout: {topP: 0.9}'), config);
    expect(topP.errors?.map((e) => e.path)).toEqual(['/rollout/topP']);
  });

  it('accepts what the embedded engines match, and leaves other kinds alone', () => {
    expect(resolveRunSpec(spec('kind: grpo\nrollout: {temperature: 0.6}'), config).ok).toBe(true);
    expect(
      resolveRunSpec(
        spec('kind: grpo\nrollout: {temperature: 0.6}\nendpoints: {inference: vllmp}'),
        config,
      ).ok,
    ).toBe(true);
    expect(
      resolveRunSpec(spec('kind: grpo\nrollout: {topP: 0.9, allowTopPBias: true}'), config).ok,
    ).toBe(true);
    expect(resolveRunSpec(spec('kind: eval\nendpoints: {inference: vllm}'), config).ok).toBe(true);
  });
});
