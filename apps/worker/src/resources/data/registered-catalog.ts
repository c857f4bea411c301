// Operator-registered JSONL datasets (operator config `datasets:`, rows already validated by
// packages/envs) added to a data catalogue next to its built-in sources. Rows are tokenised here
// once, in the run's chat format (SFT: loss on completion tokens only, docs/recipe.md §1): the
// marker format, or a model's own chat template for `turns` rows (its `completion` rows and
// preference pairs are marker-format text, refused naming the row).
import type { Tokenizer } from '@anneal/engines';
import {
  type ChatFormat,
  FormatError,
  type RegisteredDataset,
  type TemplateChatFormat,
  type ToolCallMarkers,
  createToolCallFormat,
  preferenceRowToTokens,
  sftRowToTokens,
  templateSftRowToTokens,
} from '@anneal/envs';
import { RunSetupError } from '../../errors.ts';
import type {
  DataCatalog,
  EvalExample,
  PreferenceExample,
  PromptExample,
  SftExample,
} from './catalog.ts';

/** Every HELD_OUT_EVERY-th preference pair is held out for the rm run's pair accuracy. */
export const HELD_OUT_EVERY = 10;

interface Tables {
  sft: Record<string, readonly SftExample[]>;
  preferences: Record<string, { train: PreferenceExample[]; heldOut: PreferenceExample[] }>;
  prompts: Record<string, readonly PromptExample[]>;
  eval: Record<string, readonly EvalExample[]>;
}

function addDataset(
  tables: Tables,
  dataset: RegisteredDataset,
  tokenizer: Tokenizer,
  markers: ToolCallMarkers | undefined,
  template: TemplateChatFormat | undefined,
): void {
  const { name } = dataset;
  const id = (i: number) => `${name}:${i + 1}`;
  /** Tokenise row i, naming the dataset and row when the format cannot express it. */
  const tokenise = <T>(i: number, encode: () => T): T => {
    try {
      return encode();
    } catch (error) {
      if (!(error instanceof FormatError)) throw error;
      throw new RunSetupError(`dataset '${name}' row ${i + 1}: ${error.message}`, {
        cause: error,
      });
    }
  };
  switch (dataset.kind) {
    case 'qa': {
      const key = (r: (typeof dataset.rows)[number]) => ({
        answer: r.answer,
        ...(r.aliases ? { aliases: r.aliases } : {}),
      });
      tables.prompts[name] = dataset.rows.map((r, i) => ({
        kind: 'qa',
        id: id(i),
        prompt: r.question,
        key: key(r),
      }));
      // Registered questions are assumed to need search (no tool-free marker in the format);
      // `unanswerable` rows score abstention (docs/recipe.md §8.1).
      tables.eval[name] = dataset.rows.map((r, i) => ({
        id: id(i),
        question: r.question,
        key: key(r),
        needsSearch: true,
        ...(r.unanswerable === true && { unanswerable: true }),
        ...(r.language !== undefined && { language: r.language }),
      }));
      return;
    }
    case 'rubric':
      tables.prompts[name] = dataset.rows.map((r, i) => ({
        kind: 'rubric',
        id: id(i),
        prompt: r.prompt,
        rubrics: r.rubrics,
      }));
      return;
    case 'sft': {
      const markerFormat = template ? undefined : createToolCallFormat(tokenizer, markers);
      tables.sft[name] = dataset.rows.map((r, i) => {
        const { tokens, lossMask } = tokenise(i, () =>
          markerFormat ? sftRowToTokens(r, markerFormat) : templateSftRowToTokens(r, template!),
        );
        return { id: id(i), tokens, lossMask };
      });
      return;
    }
    case 'preference': {
      if (template !== undefined) {
        throw new RunSetupError(
          `dataset '${name}': preference pairs are marker-format text; a chat-template base ` +
            'model cannot train a reward model on them',
        );
      }
      const format = createToolCallFormat(tokenizer, markers);
      const split: Tables['preferences'][string] = { train: [], heldOut: [] };
      dataset.rows.forEach((r, i) => {
        const pair = { id: id(i), ...preferenceRowToTokens(r, format) };
        (i % HELD_OUT_EVERY === HELD_OUT_EVERY - 1 ? split.heldOut : split.train).push(pair);
      });
      tables.preferences[name] = split;
      return;
    }
  }
}

/** `base` plus the registered datasets (their names never collide with built-in ones: the
 * operator config rejects that). */
export function withRegisteredDatasets(
  base: DataCatalog,
  datasets: readonly RegisteredDataset[],
  tokenizer: Tokenizer,
  markers?: ToolCallMarkers,
  format?: ChatFormat,
): DataCatalog {
  if (datasets.length === 0) return base;
  const tables: Tables = { sft: {}, preferences: {}, prompts: {}, eval: {} };
  const template = format?.kind === 'template' ? (format as TemplateChatFormat) : undefined;
  for (const dataset of datasets) addDataset(tables, dataset, tokenizer, markers, template);
  const pick =
    <T>(table: Record<string, T>, fallback: (source: string) => T) =>
    (source: string): T =>
      Object.hasOwn(table, source) ? (table[source] as T) : fallback(source);
  return {
    ...base,
    sources: {
      sft: [...base.sources.sft, ...Object.keys(tables.sft)],
      preferences: [...base.sources.preferences, ...Object.keys(tables.preferences)],
      prompts: [...base.sources.prompts, ...Object.keys(tables.prompts)],
      eval: [...base.sources.eval, ...Object.keys(tables.eval)],
    },
    sft: pick(tables.sft, (s) => base.sft(s)),
    preferences: pick(tables.preferences, (s) => base.preferences(s)),
    prompts: pick(tables.prompts, (s) => base.prompts(s)),
    evalSet: pick(tables.eval, (s) => base.evalSet(s)),
  };
}
