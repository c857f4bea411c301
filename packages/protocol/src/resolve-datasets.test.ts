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
  datasets: {
    'my-qa': { kind: 'qa', path: '/data/qa.jsonl' },
    'my-chat': { kind: 'rubric', path: '/data/chat.jsonl' },
    'my-sft': { kind: 'sft', path: '/data/sft.jsonl' },
  },
  judges: { gpt: { url: 'http://judge:8000', model: 'judge-1', apiKeyEnv: 'JUDGE_KEY' } },
});
if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
const config = parsed.value;

describe('resolveRunSpec: datasets, judges, eval models', () => {
  it('accepts built-in and registered datasets of a row format the kind reads', () => {
    const grpo = spec(
      'kind: grpo\ndata: {mix: [{source: search-qa, weight: 1}, {source: my-qa, weight: 1}, {source: my-chat, weight: 1}]}',
    );
    expect(resolveRunSpec(grpo, config).ok).toBe(true);
    expect(resolveRunSpec(spec('kind: eval\ndatasets: [my-qa, search-qa]'), config).ok).toBe(true);
  });

  it('names /data/mix/N/source for an unknown or unusable dataset', () => {
    const result = resolveRunSpec(
      spec(
        'kind: sft\ndata: {mix: [{source: tool-trajectories, weight: 1}, {source: my-qa, weight: 1}, {source: nope, weight: 1}]}',
      ),
      config,
    );
    expect(result.errors).toEqual([
      {
        path: '/data/mix/1/source',
        reason: 'unknown',
        message:
          "dataset 'my-qa' holds qa rows; a sft run reads sft (usable: builtin, tool-trajectories, style-preferences, my-sft)",
      },
      {
        path: '/data/mix/2/source',
        reason: 'unknown',
        message:
          "unknown sft dataset 'nope' (built-in or registered: builtin, tool-trajectories, style-preferences, my-sft)",
      },
    ]);
    const evalResult = resolveRunSpec(spec('kind: eval\ndatasets: [search-qa, my-sft]'), config);
    expect(evalResult.errors?.map((e) => e.path)).toEqual(['/datasets/1']);
  });

  it('refuses rubric datasets graded by a judge when the run has none; accepts with one', () => {
    const text = 'kind: grpo\ndata: {mix: [{source: my-chat, weight: 1}]}';
    const facts = { needsJudge: ['my-chat'] };
    const refused = resolveRunSpec(spec(text), config, facts);
    expect(refused.errors).toEqual([
      {
        path: '/data/mix/0/source',
        reason: 'missing',
        message:
          "dataset 'my-chat' has rubrics without a programmatic check and this run has no judge (set endpoints.judge or defaults.judge; declared judges: gpt)",
      },
    ]);
    const judged = resolveRunSpec(spec(`${text}\nendpoints: {judge: gpt}`), config, facts);
    expect(judged.ok).toBe(true);
    const unknown = resolveRunSpec(spec(`${text}\nendpoints: {judge: claude}`), config, facts);
    expect(unknown.errors?.[0]).toMatchObject({
      path: '/endpoints/judge',
      message: "unknown judge endpoint 'claude' (declared: gpt)",
    });
    const withDefault = validateOperatorConfig({
      ...config,
      defaults: { ...config.defaults, judge: 'gpt' },
    });
    if (!withDefault.ok) throw new Error(JSON.stringify(withDefault.errors));
    const defaulted = resolveRunSpec(spec(text), withDefault.value, facts);
    if (!defaulted.ok) throw new Error(JSON.stringify(defaulted.errors));
    expect(defaulted.value.endpoints.judge).toBe('gpt');
  });

  it('checks eval models and rejects built-in names as registered datasets', () => {
    const result = resolveRunSpec(spec('kind: eval\nmodels: [{base: tiny}, {base: huge}]'), config);
    expect(result.errors).toEqual([
      {
        path: '/models/1/base',
        reason: 'unknown',
        message: "unknown base model 'huge' (declared: tiny)",
      },
    ]);
    const shadow = validateOperatorConfig({
      ...local,
      datasets: { 'search-qa': { kind: 'qa', path: '/x.jsonl' } },
    });
    expect(shadow.ok ? [] : shadow.errors.map((e) => e.path)).toEqual(['/datasets/search-qa']);
  });
});
