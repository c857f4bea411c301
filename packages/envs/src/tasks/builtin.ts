// The built-in tasks of the embedded demo (deterministic for a seed, no downloads). The design
// constraint is learnability by a tiny byte-level transformer (~2 layers, d=64, ~200-token
// context, minutes on 2 CPU cores): short invented names, one short page per entity, one
// rendered search result per call, and every demo sequence fits the context.
import { ByteTokenizer } from '@anneal/engines';
import { DEFAULT_MIX_WEIGHTS, PromptMix } from '../data/mix.ts';
import { sftRowToTokens } from '../data/tokens.ts';
import { createToolCallFormat } from '../format/toolCallFormat.ts';
import type { ToolCallFormat } from '../format/toolCallFormat.ts';
import { seededRng, shuffled } from '../random.ts';
import { LocalCorpusBackend } from '../search/localCorpus.ts';
import type { CorpusDocument } from '../search/localCorpus.ts';
import { renderResults } from '../search/render.ts';
import { SearchWebTool } from '../search/searchWeb.ts';
import type { SearchWebOptions } from '../search/searchWeb.ts';
import { resolveLimits, resolveRender } from '../search/limits.ts';
import { buildWorld } from './corpus.ts';
import type { Fact } from './corpus.ts';
import { multiHopQuestions } from './qa.ts';
import { preferencePairs } from './preferences.ts';
import { rubricPrompts } from './rubricPrompts.ts';
import { toolFreeQuestions } from './toolFree.ts';
import { qaTurns, sftDemos } from './trajectories.ts';
import type { SftDemo, TaskPreferencePair, TaskPrompt, TaskQa, TaskRubricPrompt } from './types.ts';

export interface BuiltinSizes {
  persons: number;
  towns: number;
  lands: number;
  trainQa: number;
  evalQa: number;
  toolFreeTrain: number;
  toolFreeEval: number;
  rubric: number;
  /** Share of preference pairs held out for the reward model's accuracy (by prompt). */
  preferenceHeldOut: number;
}

export interface BuiltinOptions {
  /** Relative weight of 1-, 2- and 3-hop search questions (default mostly 1-hop). */
  hopWeights: Readonly<Record<1 | 2 | 3, number>>;
  /** Share of tool-free SFT demos that search anyway (default 0.3). */
  redundantCallRate: number;
  /** Context of the model the tasks are for; every demo must fit (default 200). */
  maxContextTokens: number;
  /** Prompt mix weights (default 90% QA, 10% rubric). */
  mixWeights: Readonly<Record<string, number>>;
}

export const DEFAULT_BUILTIN_SIZES: Readonly<BuiltinSizes> = Object.freeze({
  persons: 96, // 1-hop questions available: 2 per person + 1 per town
  towns: 24,
  lands: 6,
  trainQa: 160,
  evalQa: 40,
  toolFreeTrain: 64,
  toolFreeEval: 24,
  rubric: 24,
  preferenceHeldOut: 0.2,
});

export const DEFAULT_BUILTIN_OPTIONS: Readonly<BuiltinOptions> = Object.freeze({
  hopWeights: Object.freeze({ 1: 0.85, 2: 0.15, 3: 0 }),
  redundantCallRate: 0.3,
  maxContextTokens: 200,
  mixWeights: DEFAULT_MIX_WEIGHTS,
});

/** search_web settings of the built-in tasks: one short result per call fits the context. */
export const BUILTIN_SEARCH_OPTIONS: Readonly<SearchWebOptions> = Object.freeze({
  limits: { resultsPerCall: 1 },
  render: {
    resultsPerCall: 1,
    snippetChars: 60,
    totalChars: 60,
    includeTitle: false,
    includeUrl: false,
  },
});

export interface BuiltinTasks {
  seed: number;
  format: ToolCallFormat;
  corpus: { documents: readonly CorpusDocument[]; facts: readonly Fact[] };
  /** BM25 backend over the corpus, registered as endpoint 'builtin'. */
  search: LocalCorpusBackend;
  searchOptions: Readonly<SearchWebOptions>;
  /** A search_web tool with the built-in limits and rendering. */
  createTool(): SearchWebTool;
  qa: { train: TaskQa[]; eval: TaskQa[] };
  toolFree: { train: TaskQa[]; eval: TaskQa[] };
  rubric: TaskRubricPrompt[];
  /** The GRPO prompt mix: train QA + tool-free train (source 'qa'), rubric prompts ('rubric'). */
  createMix(seed?: number): PromptMix<TaskPrompt>;
  sft: SftDemo[];
  preference: { train: TaskPreferencePair[]; heldOut: TaskPreferencePair[] };
}

/** Independent stream per component: changing one size leaves the others' draws alone. */
function stream(seed: number, component: number) {
  return seededRng(Math.imul(seed ^ 0x5bd1e995, 0x27d4eb2d) + component * 0x9e3779b9);
}

export function builtinTasks(
  seed: number,
  sizes: Partial<BuiltinSizes> = {},
  options: Partial<BuiltinOptions> = {},
): BuiltinTasks {
  const size = { ...DEFAULT_BUILTIN_SIZES, ...sizes };
  const opts = { ...DEFAULT_BUILTIN_OPTIONS, ...options };
  const format = createToolCallFormat(new ByteTokenizer());
  const world = buildWorld(stream(seed, 1), {
    persons: size.persons,
    towns: size.towns,
    lands: size.lands,
    outsiders: 24,
  });
  const search = new LocalCorpusBackend('builtin', world.documents);
  const limits = resolveLimits(BUILTIN_SEARCH_OPTIONS.limits);
  const render = resolveRender(BUILTIN_SEARCH_OPTIONS.render, limits);
  const searchText = (query: string) =>
    renderResults(search.searchSync(query, limits.resultsPerCall), render);
  const fits = (tokens: number) => tokens <= opts.maxContextTokens;

  const allQa = multiHopQuestions(stream(seed, 2), world, {
    count: size.trainQa + size.evalQa,
    hopWeights: opts.hopWeights,
    searchText,
    fits: (q) =>
      fits(
        sftRowToTokens({ prompt: q.question, turns: qaTurns(q, searchText) }, format).tokens.length,
      ),
  });
  const qa = { eval: allQa.slice(0, size.evalQa), train: allQa.slice(size.evalQa) };
  const allToolFree = toolFreeQuestions(
    stream(seed, 3),
    size.toolFreeTrain + size.toolFreeEval,
    world.outsiders,
  );
  const toolFree = {
    eval: allToolFree.slice(0, size.toolFreeEval),
    train: allToolFree.slice(size.toolFreeEval),
  };
  const rubric = rubricPrompts(stream(seed, 4), size.rubric);
  const sft = sftDemos(stream(seed, 5), {
    qa: qa.train,
    toolFree: toolFree.train,
    rubric,
    search: searchText,
    format,
    redundantCallRate: opts.redundantCallRate,
  });
  const tooLong = sft.find((d) => !fits(d.tokens.length));
  if (tooLong)
    throw new RangeError(
      `demo '${tooLong.promptId}' has ${tooLong.tokens.length} tokens > ${opts.maxContextTokens}`,
    );
  const pairs = shuffled(stream(seed, 6), preferencePairs(stream(seed, 7), sft, format));
  const heldOutCount = Math.round(pairs.length * size.preferenceHeldOut);
  const qaSource: TaskPrompt[] = [...qa.train, ...toolFree.train].map((q) => ({
    kind: 'qa',
    id: q.id,
    prompt: q.question,
    qa: q,
  }));
  const rubricSource: TaskPrompt[] = rubric.map((r) => ({
    kind: 'rubric',
    id: r.id,
    prompt: r.prompt,
    rubric: r,
  }));
  return {
    seed,
    format,
    corpus: { documents: world.documents, facts: world.facts },
    search,
    searchOptions: BUILTIN_SEARCH_OPTIONS,
    createTool: () => new SearchWebTool(search, BUILTIN_SEARCH_OPTIONS),
    qa,
    toolFree,
    rubric,
    createMix: (mixSeed = seed) =>
      new PromptMix(
        [
          { name: 'qa', weight: opts.mixWeights['qa'] ?? 0, items: qaSource },
          { name: 'rubric', weight: opts.mixWeights['rubric'] ?? 0, items: rubricSource },
        ],
        stream(mixSeed, 8),
      ),
    sft,
    preference: { heldOut: pairs.slice(0, heldOutCount), train: pairs.slice(heldOutCount) },
  };
}
