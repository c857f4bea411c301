// @anneal/worker: the worker runtime — consumes a pool's BullMQ queue and runs sft | rm | grpo |
// eval executors. `anneal worker`, `anneal up` and the demo call startWorker in-process.
export { startWorker, type StartWorkerOptions, type WorkerHandle } from './worker.ts';
export { type WorkerProcessHooks, runWorkerProcess } from './process-entry.ts';
export { type WorkerConfig, type WorkerConfigInput, defineWorkerConfig } from './config.ts';
export { WorkerEnv, loadWorkerConfig, parseWorkerEnv } from './env.ts';
export { RunSetupError, WORKER_ERROR_CODES, WorkerConfigError } from './errors.ts';
export type { EngineFactories } from './resources/factories.ts';
export type { RewardModelSource } from './resources/reward-model-source.ts';
export { type EmbeddedEngines, defaultEmbeddedEngines } from './resources/embedded.ts';
export type {
  Executor,
  ExecutorContext,
  ExecutorResult,
  ResolvedModel,
  RunResources,
} from './executors/types.ts';
// The rollout ledger's record builder, for bench/overhead to measure on a production-size step.
export {
  ledgerRecords,
  type LedgerRecordInputs,
  type SharedParts,
} from './executors/grpo/ledger-records.ts';
