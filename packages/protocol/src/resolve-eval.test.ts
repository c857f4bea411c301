// An eval the API accepts must be runnable: base-model targets reach the sampler through a
// trainer endpoint, so local mode (`anneal up`) fills its embedded trainer in, and a config
// without a trainer that declares eval refuses the run at submission, naming the target.
import { describe, expect, it } from 'vitest';
import { localOperatorConfig, validateOperatorConfig } from './operator-config-parse.ts';
import type { OperatorConfig } from './operator-config.ts';
import { resolveRunSpec } from './resolve.ts';
import { parseRunSpec, type RunSpec } from './run-spec/index.ts';

function spec(text: string): RunSpec {
  const result = parseRunSpec(text);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.value;
}

const local = localOperatorConfig('c'.repeat(64));

function config(value: unknown): OperatorConfig {
  const parsed = validateOperatorConfig(value);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

describe('resolveRunSpec: eval trainer', () => {
  it('local mode: an eval of the base model gets the embedded trainer', () => {
    const result = resolveRunSpec(spec('kind: eval\nmodels: [{}]'), local);
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(result.value.endpoints.trainer).toBe('embedded');
  });

  it('refuses a base-model target when no trainer declares eval, naming the target', () => {
    const noEval = config({
      ...local,
      trainers: {
        embedded: {
          type: 'embedded',
          capabilities: { kinds: ['sft'], losses: ['cross_entropy'] },
        },
      },
    });
    const result = resolveRunSpec(
      spec(
        `kind: eval\nmodels: [{checkpoint: {run: run_01JTEST0000000000000000001}}, {base: tiny}]`,
      ),
      noEval,
    );
    expect(result.ok).toBe(false);
    expect(result.errors?.map((e) => [e.path, e.reason])).toEqual([['/models/1', 'missing']]);
    expect(result.errors?.[0]?.message).toMatch(/base model 'tiny' needs a trainer endpoint/);
  });

  it('refuses a named trainer that does not declare eval', () => {
    const noEval = config({
      ...local,
      trainers: {
        embedded: { type: 'embedded', capabilities: { kinds: ['sft'], losses: ['cross_entropy'] } },
      },
    });
    const result = resolveRunSpec(spec('kind: eval\nendpoints: {trainer: embedded}'), noEval);
    expect(result.errors?.map((e) => e.path)).toEqual(['/endpoints/trainer']);
  });

  it('checkpoint-only evals need no trainer', () => {
    const none = config({ ...local, defaults: { ...local.defaults, trainer: undefined } });
    const result = resolveRunSpec(
      spec('kind: eval\nmodels: [{checkpoint: {run: run_01JTEST0000000000000000001}}]'),
      none,
    );
    expect(result.ok).toBe(true);
  });
});

describe('resolveRunSpec: eval judge', () => {
  const judges = { gpt: { url: 'http://judge:8000', model: 'judge-1' } };

  it('judge: llm without a judge endpoint is refused at /judge', () => {
    const result = resolveRunSpec(spec('kind: eval\njudge: llm'), local);
    expect(result.errors?.map((e) => [e.path, e.reason])).toEqual([['/judge', 'missing']]);
    expect(result.errors?.[0]?.message).toMatch(/judge: llm grades answers with a judge endpoint/);
  });

  it('judge: llm takes the named judge, else the operator default; verifier takes none', () => {
    const withJudge = config({ ...local, judges, defaults: { ...local.defaults, judge: 'gpt' } });
    const named = resolveRunSpec(
      spec('kind: eval\njudge: llm\nendpoints: {judge: gpt}'),
      config({ ...local, judges }),
    );
    if (!named.ok) throw new Error(JSON.stringify(named.errors));
    expect(named.value.endpoints.judge).toBe('gpt');
    const byDefault = resolveRunSpec(spec('kind: eval\njudge: llm'), withJudge);
    if (!byDefault.ok) throw new Error(JSON.stringify(byDefault.errors));
    expect(byDefault.value.endpoints.judge).toBe('gpt');
    const verifier = resolveRunSpec(spec('kind: eval'), withJudge);
    if (!verifier.ok) throw new Error(JSON.stringify(verifier.errors));
    expect(verifier.value.endpoints.judge).toBeUndefined();
  });
});
