// Submission check of a base model that talks in its own chat template: SFT and RM runs, whose
// data is marker-format tokens, are refused naming /model/base; GRPO and eval are accepted.
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
});
if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
const config = parsed.value;

describe('chat-template base models at submission', () => {
  it.each(['sft', 'rm'])(
    'refuses a %s run on a template base model, naming /model/base',
    (kind) => {
      const result = resolveRunSpec(spec(`kind: ${kind}\nmodel: { base: qwen3 }`), config);
      expect(result.ok).toBe(false);
      expect(result.errors).toEqual([
        {
          path: '/model/base',
          reason: 'capability',
          message: expect.stringMatching(
            new RegExp(
              `^base model 'qwen3' has chatFormat \\{type: template\\}; ${kind} runs train on marker-format data`,
            ),
          ),
        },
      ]);
    },
  );

  it('accepts grpo and eval on it, and sft on a marker base model', () => {
    expect(resolveRunSpec(spec('kind: eval\nmodel: { base: qwen3 }'), config).ok).toBe(true);
    const grpo = resolveRunSpec(spec('kind: grpo\nmodel: { base: qwen3 }'), config);
    expect(grpo.errors?.filter((e) => e.path === '/model/base') ?? []).toEqual([]);
    expect(resolveRunSpec(spec('kind: sft'), config).ok).toBe(true);
  });
});
