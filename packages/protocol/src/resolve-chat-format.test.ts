// Submission checks of a base model that talks in its own chat template: it trains only on
// registered sft datasets (rendered from their turns). rm runs are refused naming /model/base,
// built-in sft sources naming /data/mix/N/source; grpo and eval are accepted.
import { describe, expect, it } from 'vitest';
import { localOperatorConfig, validateOperatorConfig } from './operator-config-parse.ts';
import { resolveRunSpec } from './resolve.ts';
import { parseRunSpec, type RunSpec } from './run-spec/index.ts';

function spec(text: string): RunSpec {
  const result = parseRunSpec(text);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.value;
}

const local = localOperatorConfig('b'.repeat(64));
const parsed = validateOperatorConfig({
  ...local,
  baseModels: {
    ...local.baseModels,
    qwen3: {
      model: 'Qwen/Qwen3-8B',
      tokenizer: { type: 'hf', path: '/models/qwen3/tokenizer.json', eosToken: '<|im_end|>' },
      chatFormat: { type: 'template' },
    },
  },
  datasets: { 'qwen-sft': { kind: 'sft', path: '/data/sft.jsonl' } },
});
if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
const config = parsed.value;

describe('chat-template base models at submission', () => {
  it('refuses an rm run on a template base model, naming /model/base', () => {
    const result = resolveRunSpec(spec('kind: rm\nmodel: { base: qwen3 }'), config);
    expect(result.errors).toEqual([
      {
        path: '/model/base',
        reason: 'capability',
        message:
          "base model 'qwen3' has chatFormat {type: template}; rm runs train on preference " +
          'pairs in the marker format, which its chat template does not render',
      },
    ]);
  });

  it('refuses built-in sft sources on it, naming each, and accepts registered sft datasets', () => {
    const mixed = spec(
      'kind: sft\nmodel: { base: qwen3 }\n' +
        'data: { mix: [{ source: qwen-sft, weight: 1 }, { source: tool-trajectories, weight: 1 }] }',
    );
    expect(resolveRunSpec(mixed, config).errors).toEqual([
      {
        path: '/data/mix/1/source',
        reason: 'capability',
        message: expect.stringMatching(
          /^base model 'qwen3' has chatFormat \{type: template\}; 'tool-trajectories' is not a registered sft dataset/,
        ),
      },
    ]);
    const registered =
      'kind: sft\nmodel: { base: qwen3 }\ndata: { mix: [{ source: qwen-sft, weight: 1 }] }';
    expect(resolveRunSpec(spec(registered), config).ok).toBe(true);
  });

  it('accepts grpo and eval on it, and built-in sft data on a marker base model', () => {
    expect(resolveRunSpec(spec('kind: eval\nmodel: { base: qwen3 }'), config).ok).toBe(true);
    const grpo = resolveRunSpec(spec('kind: grpo\nmodel: { base: qwen3 }'), config);
    expect(grpo.errors?.filter((e) => e.path === '/model/base') ?? []).toEqual([]);
    expect(resolveRunSpec(spec('kind: sft'), config).ok).toBe(true);
  });
});
