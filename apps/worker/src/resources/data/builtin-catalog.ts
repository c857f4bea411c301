// The built-in tasks of the embedded demo (packages/envs `builtinTasks`) as a DataCatalog.
// Source names follow the run-spec defaults (protocol): sft `tool-trajectories` and
// `style-preferences`, rm `preference-pairs`, grpo `search-qa` and `rubric-chat`, eval
// `search-qa`; `builtin` names everything of a use at once.
import { builtinTasks, type BuiltinSizes, type BuiltinTasks, type TaskQa } from '@anneal/envs';
import {
  lookup,
  type DataCatalog,
  type EvalExample,
  type PreferenceExample,
  type PromptExample,
  type SftExample,
} from './catalog.ts';

/** Context of the embedded default model (engines DEFAULT_MODEL_CONFIG.blockSize). */
export const EMBEDDED_CONTEXT_TOKENS = 256;

function evalExamples(items: readonly TaskQa[]): EvalExample[] {
  return items.map((q) => ({
    id: q.id,
    question: q.question,
    key: { answer: q.answer, ...(q.aliases ? { aliases: q.aliases } : {}) },
    needsSearch: q.needsSearch,
  }));
}

function qaPrompts(items: readonly TaskQa[]): PromptExample[] {
  return items.map((q) => ({
    kind: 'qa',
    id: q.id,
    prompt: q.question,
    key: { answer: q.answer, ...(q.aliases ? { aliases: q.aliases } : {}) },
  }));
}

export interface BuiltinCatalogOptions {
  /** Context window rollouts must fit (default the embedded model's 256 tokens). */
  maxContextTokens?: number;
}

export function builtinDataCatalog(
  tasks: BuiltinTasks,
  options: BuiltinCatalogOptions = {},
): DataCatalog {
  const toSft = (source: string) => (demos: BuiltinTasks['sft']) =>
    demos.map((d, i): SftExample => ({
      id: `${source}:${d.promptId}:${i}`,
      tokens: d.tokens,
      lossMask: d.lossMask,
    }));
  const toPairs = (pairs: BuiltinTasks['preference']['train']) =>
    pairs.map((p, i): PreferenceExample => ({
      id: `${p.promptId}:${i}`,
      prompt: p.tokens.prompt,
      chosen: p.tokens.chosen,
      rejected: p.tokens.rejected,
    }));
  const sft: Record<string, SftExample[]> = {
    builtin: toSft('builtin')(tasks.sft),
    'tool-trajectories': toSft('tool-trajectories')(tasks.sft.filter((d) => d.source !== 'rubric')),
    'style-preferences': toSft('style-preferences')(tasks.sft.filter((d) => d.source === 'rubric')),
  };
  const pairs = {
    train: toPairs(tasks.preference.train),
    heldOut: toPairs(tasks.preference.heldOut),
  };
  const preferences = { builtin: pairs, 'preference-pairs': pairs };
  const rubricPrompts: PromptExample[] = tasks.rubric.map((r) => ({
    kind: 'rubric',
    id: r.id,
    prompt: r.prompt,
    rubrics: r.rubrics,
  }));
  const prompts: Record<string, PromptExample[]> = {
    'search-qa': qaPrompts([...tasks.qa.train, ...tasks.toolFree.train]),
    'rubric-chat': rubricPrompts,
  };
  const evalAll = evalExamples([...tasks.qa.eval, ...tasks.toolFree.eval]);
  const evalSets: Record<string, EvalExample[]> = {
    builtin: evalAll,
    'search-qa': evalAll,
    'search-qa-tool-free': evalExamples(tasks.toolFree.eval),
  };
  return {
    sources: {
      sft: Object.keys(sft),
      preferences: Object.keys(preferences),
      prompts: Object.keys(prompts),
      eval: Object.keys(evalSets),
    },
    sft: (source) => lookup(sft, source, 'sft'),
    preferences: (source) => lookup(preferences, source, 'preference'),
    prompts: (source) => lookup(prompts, source, 'prompt'),
    evalSet: (source) => lookup(evalSets, source, 'eval'),
    search: { backend: tasks.search, options: tasks.searchOptions },
    maxContextTokens: options.maxContextTokens ?? EMBEDDED_CONTEXT_TOKENS,
  };
}

/**
 * The world the worker serves (about 4x envs' defaults). On envs' 96-person world the embedded
 * tiny model memorises the ~250 demos (SFT loss 0.05) and answers ~14% of the eval questions;
 * with 400 persons it has to learn to copy names from the question and the search result, and
 * answers ~35-40% after ~1000 SFT steps (measured for `anneal demo`, docs/demo.md). 300 eval
 * questions (200 search QA, 100 tool-free) keep the eval's standard error near 0.03.
 */
export const WORKER_WORLD_SIZES: Readonly<Partial<BuiltinSizes>> = Object.freeze({
  persons: 500,
  towns: 70,
  lands: 10,
  trainQa: 700,
  evalQa: 200,
  toolFreeTrain: 200,
  toolFreeEval: 100,
});

let defaultCatalog: DataCatalog | undefined;

/** The catalogue used when the runtime passes none: built-in tasks, seed 0 (the same world for
 * every run of a worker, so SFT, RM, GRPO and eval runs see one corpus). */
export function defaultDataCatalog(): DataCatalog {
  defaultCatalog ??= builtinDataCatalog(builtinTasks(0, WORKER_WORLD_SIZES));
  return defaultCatalog;
}
