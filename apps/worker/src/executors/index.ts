// The executors by run kind (the worker runtime dispatches `spec.kind` here).
import { runEval } from './eval/index.ts';
import { runGrpo } from './grpo/index.ts';
import { runRm } from './rm.ts';
import { runSft } from './sft.ts';
import type { ExecutorRegistry } from './types.ts';

export const EXECUTORS: ExecutorRegistry = Object.freeze({
  sft: runSft,
  rm: runRm,
  grpo: runGrpo,
  eval: runEval,
});

export { executorFor } from './types.ts';
export type {
  Executor,
  ExecutorContext,
  ExecutorRegistry,
  ExecutorTable,
  ExecutorResult,
  ResolvedModel,
  RunResources,
  SpecOf,
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
