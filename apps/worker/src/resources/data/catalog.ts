// Datasets by source name, as the executors consume them: already tokenised in the run's
// tool-call format (token-in/token-out: executors never re-tokenise model text). The worker
// runtime passes one catalogue per run (`RunResources.data`); `builtinDataCatalog` serves the
// built-in tasks of the embedded demo.
import type {
  AnswerKey,
  LanguageCode,
  Rubric,
  SearchBackend,
  SearchWebOptions,
} from '@anneal/envs';
import { RunSetupError } from '../../errors.ts';

/** One SFT sequence: prompt + completion tokens; lossMask 1 on completion tokens only (docs/recipe.md §1). */
export interface SftExample {
  id: string;
  tokens: readonly number[];
  lossMask: readonly number[];
}

/** One preference pair (docs/recipe.md §5): the prompt and both responses, as token ids. */
export interface PreferenceExample {
  id: string;
  prompt: readonly number[];
  chosen: readonly number[];
  rejected: readonly number[];
}

/** A GRPO prompt (docs/recipe.md §3): verifiable QA (answer key) or rubric chat (rubric set). */
export type PromptExample =
  | { kind: 'qa'; id: string; prompt: string; key: AnswerKey }
  | { kind: 'rubric'; id: string; prompt: string; rubrics: readonly Rubric[] };

/** An evaluation question (docs/recipe.md §8); `needsSearch: false` marks tool-free questions. */
export interface EvalExample {
  id: string;
  question: string;
  key: AnswerKey;
  needsSearch: boolean;
  /** The evidence to answer is missing: the right response is to abstain (docs/recipe.md §8.1). */
  unanswerable?: boolean;
  /** The question's language (language-mismatch check); absent: detected from the question. */
  language?: Exclude<LanguageCode, 'und'>;
}

export interface DataCatalog {
  /** Source names per use, for error messages. */
  readonly sources: Readonly<Record<'sft' | 'preferences' | 'prompts' | 'eval', readonly string[]>>;
  sft(source: string): readonly SftExample[];
  preferences(source: string): {
    train: readonly PreferenceExample[];
    heldOut: readonly PreferenceExample[];
  };
  prompts(source: string): readonly PromptExample[];
  evalSet(source: string): readonly EvalExample[];
  /** Search backend these datasets were written against (the built-in corpus), if any. */
  readonly search?: { backend: SearchBackend; options?: SearchWebOptions };
  /** Context window the datasets were sized for, if any. */
  readonly maxContextTokens?: number;
}

export class UnknownDatasetError extends RunSetupError {
  override name = 'UnknownDatasetError';
}

export type DatasetUse = keyof DataCatalog['sources'];

/** Throws naming the spec field (a JSON pointer) when `source` is not a `use` dataset. */
export function checkSource(
  catalog: DataCatalog,
  use: DatasetUse,
  source: string,
  field: string,
): void {
  const known = catalog.sources[use];
  if (!known.includes(source)) {
    throw new UnknownDatasetError(
      `${field}: unknown ${use} dataset '${source}' (known: ${known.join(', ') || 'none'})`,
    );
  }
}

/** Looks `source` up in `table` or throws with the known names. */
export function lookup<T>(table: Readonly<Record<string, T>>, source: string, use: string): T {
  const found = Object.hasOwn(table, source) ? table[source] : undefined;
  if (found === undefined) {
    const known = Object.keys(table).join(', ') || 'none';
    throw new UnknownDatasetError(`unknown ${use} dataset '${source}' (known: ${known})`);
  }
  return found;
}
