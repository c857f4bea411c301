import { ByteTokenizer } from '@anneal/engines';
import { builtinTasks } from '@anneal/envs';
import { validateRunSpec, type RunSpec } from '@anneal/protocol';
import { describe, expect, it } from 'vitest';
import { EXECUTORS } from '../index.ts';
import { ScriptedInference, ShiftedTrainerModel, memoryContext } from '../testing/fakes.ts';
import type { RunResources } from '../types.ts';
import { builtinDataCatalog } from './builtin-catalog.ts';

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

function spec(value: Record<string, unknown>): RunSpec {
  const parsed = validateRunSpec(value);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
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
});
