import { ByteTokenizer } from '@anneal/engines';
import { builtinTasks } from '@anneal/envs';
import { validateRunSpec, type RunKind } from '@anneal/protocol';
import { describe, expect, it } from 'vitest';
import { EXECUTORS } from '../../executors/index.ts';
import {
  ScriptedInference,
  ShiftedTrainerModel,
  memoryContext,
  specOfKind,
} from '../../../test/executors/fakes.ts';
import type { RunResources, SpecOf } from '../../executors/types.ts';
import { builtinDataCatalog } from './builtin-catalog.ts';
import { HELD_OUT_EVERY, withRegisteredDatasets } from './registered-catalog.ts';
import { RunSetupError } from '../../errors.ts';
import { BUILTIN_DATASETS } from '@anneal/protocol';

const tasks = builtinTasks(3, {
  persons: 24,
  towns: 8,
  lands: 3,
  trainQa: 20,
  evalQa: 6,
  toolFreeTrain: 8,
  toolFreeEval: 4,
  rubric: 4,
});
const catalog = builtinDataCatalog(tasks);

function spec<K extends RunKind>(value: Record<string, unknown> & { kind: K }): SpecOf<K> {
  const parsed = validateRunSpec(value);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return specOfKind(value.kind, parsed.value);
}

describe('builtinDataCatalog', () => {
  it('serves the run-spec default source names of every kind', () => {
    const masked = catalog.sft('tool-trajectories');
    expect(masked.length).toBe(tasks.sft.filter((d) => d.source !== 'rubric').length);
    expect(masked.every((e) => e.lossMask.length === e.tokens.length)).toBe(true);
    expect(catalog.sft('style-preferences').length).toBe(4);
    expect(catalog.preferences('preference-pairs').heldOut.length).toBe(
      tasks.preference.heldOut.length,
    );
    const prompts = catalog.prompts('search-qa');
    expect(prompts.length).toBe(28);
    expect(prompts.every((p) => p.kind === 'qa')).toBe(true);
    expect(catalog.prompts('rubric-chat').every((p) => p.kind === 'rubric')).toBe(true);
    const evalSet = catalog.evalSet('search-qa');
    expect(evalSet.filter((e) => !e.needsSearch).length).toBe(4);
    expect(catalog.maxContextTokens).toBe(256);
  });

  it('rejects an unknown source before any trainer call, naming the spec field', async () => {
    const model = new ShiftedTrainerModel(0);
    const resources = {
      tokenizer: new ByteTokenizer(),
      inference: new ScriptedInference(() => ''),
      trainer: {
        capabilities: { kinds: ['sft'], losses: [], reduction: 'sum' },
        createModel: () => Promise.resolve(model),
        close: () => Promise.resolve(),
      },
      model: { label: 'base', baseModel: 'x', checkpoint: null },
      data: catalog,
    } as unknown as RunResources;
    const ctx = memoryContext(
      spec({
        kind: 'sft',
        data: {
          mix: [
            { source: 'tool-trajectories', weight: 1 },
            { source: 'nope', weight: 1 },
          ],
        },
      }),
      resources,
    );
    await expect(EXECUTORS.sft(ctx)).rejects.toThrow(
      "/data/mix/1/source: unknown sft dataset 'nope' (known: builtin, tool-trajectories, style-preferences)",
    );
    const evalCtx = memoryContext(
      spec({ kind: 'eval', datasets: ['search-qa', 'trivia'] }),
      resources,
    );
    await expect(EXECUTORS.eval(evalCtx)).rejects.toThrow(
      "/datasets/1: unknown eval dataset 'trivia'",
    );
    expect(model.calls).toHaveLength(0);
  });

  it('serves exactly the built-in names the control plane accepts at submission', () => {
    expect([...catalog.sources.sft]).toEqual([...BUILTIN_DATASETS.sft]);
    expect([...catalog.sources.preferences]).toEqual([...BUILTIN_DATASETS.rm]);
    expect([...catalog.sources.prompts]).toEqual([...BUILTIN_DATASETS.grpo]);
    expect([...catalog.sources.eval]).toEqual([...BUILTIN_DATASETS.eval]);
  });
});

describe('registered datasets in the catalogue', () => {
  const tokenizer = new ByteTokenizer();
  const registered = withRegisteredDatasets(
    catalog,
    [
      { name: 'my-sft', kind: 'sft', path: 'x', rows: [{ prompt: 'hi', completion: 'yo' }] },
      {
        name: 'my-pairs',
        kind: 'preference',
        path: 'x',
        rows: Array.from({ length: 2 * HELD_OUT_EVERY }, (_, i) => ({
          prompt: `p${i}`,
          chosen: 'good',
          rejected: 'bad',
        })),
      },
      {
        name: 'my-chat',
        kind: 'rubric',
        path: 'x',
        rows: [{ prompt: 'p', rubrics: [{ text: 'is polite' }] }],
      },
    ],
    tokenizer,
  );

  it('tokenises rows (loss on completion tokens only) and holds out every 10th pair', () => {
    const [example] = registered.sft('my-sft');
    expect(example?.tokens.length).toBe(example?.lossMask.length);
    const trained = example!.tokens.filter((_, i) => example!.lossMask[i] === 1);
    expect(tokenizer.decode(trained.slice(0, 2))).toBe('yo');
    expect(registered.sft('tool-trajectories').length).toBeGreaterThan(0);
    const pairs = registered.preferences('my-pairs');
    expect([pairs.train.length, pairs.heldOut.length]).toEqual([18, 2]);
    expect(registered.sources.prompts).toEqual(['search-qa', 'rubric-chat', 'my-chat']);
  });

  it('a grpo run over rubrics only a judge can grade, with no judge, fails before training', async () => {
    const model = new ShiftedTrainerModel(0);
    const resources = {
      tokenizer,
      inference: new ScriptedInference(() => ''),
      trainer: {
        capabilities: { kinds: ['grpo'], losses: ['importance_sampling'], reduction: 'sum' },
        createModel: () => Promise.resolve(model),
        close: () => Promise.resolve(),
      },
      model: { label: 'base', baseModel: 'x', checkpoint: null },
      data: registered,
    } as unknown as RunResources;
    const ctx = memoryContext(
      spec({ kind: 'grpo', data: { mix: [{ source: 'my-chat', weight: 1 }] } }),
      resources,
    );
    const run = EXECUTORS.grpo(ctx);
    await expect(run).rejects.toThrow(RunSetupError);
    await expect(run).rejects.toThrow(
      `/data/mix/0/source: dataset 'my-chat' has rubric "is polite" without a programmatic check`,
    );
    expect(model.calls).toHaveLength(0);
  });
});
