// The executors by run kind (the worker runtime dispatches `spec.kind` here).
import type { RunKind } from '@anneal/protocol';
import { runEval } from './eval/index.ts';
import { runGrpo } from './grpo/index.ts';
import { runRm } from './rm.ts';
import { runSft } from './sft.ts';
import type { Executor } from './types.ts';

export const EXECUTORS: Readonly<Record<RunKind, Executor>> = Object.freeze({
  sft: runSft,
  rm: runRm,
  grpo: runGrpo,
  eval: runEval,
});

export type {
  Executor,
  ExecutorContext,
  ExecutorResult,
  ResolvedModel,
  RunResources,
} from './types.ts';
export type {
  DataCatalog,
  EvalExample,
  PreferenceExample,
  PromptExample,
  SftExample,
} from '../resources/data/catalog.ts';
export { UnknownDatasetError } from '../resources/data/catalog.ts';
export { builtinDataCatalog, defaultDataCatalog } from '../resources/data/builtin-catalog.ts';
export { METRIC, stepCommittedEvent } from './metrics.ts';
