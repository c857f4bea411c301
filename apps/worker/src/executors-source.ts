// Where the worker's executors come from: the real ones (`./executors/index.ts`, exporting
// EXECUTORS), or — TEST ONLY, via ANNEAL_TEST_EXECUTORS — a fixture module that may also
// replace engine factories, so process-level tests (kill -9) do not depend on real training.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { RUN_KINDS } from '@anneal/protocol';
import type { WorkerConfig } from './config.ts';
import { WorkerConfigError } from './errors.ts';
import type { EngineFactories } from './resources/factories.ts';
import type { ExecutorTable } from './runtime/process-run.ts';

export interface ExecutorModule {
  EXECUTORS: ExecutorTable;
  ENGINE_FACTORIES?: Partial<EngineFactories>;
}

function checkModule(value: unknown, where: string, field: string): ExecutorModule {
  const executors = (value as { EXECUTORS?: unknown }).EXECUTORS;
  if (typeof executors !== 'object' || executors === null) {
    throw new WorkerConfigError(field, `${where} does not export EXECUTORS`);
  }
  for (const [kind, executor] of Object.entries(executors)) {
    if (!(RUN_KINDS as readonly string[]).includes(kind) || typeof executor !== 'function') {
      throw new WorkerConfigError(
        field,
        `${where}: EXECUTORS.${kind} is not an executor of a run kind`,
      );
    }
  }
  return value as ExecutorModule;
}

export async function loadExecutorModule(config: Readonly<WorkerConfig>): Promise<ExecutorModule> {
  if (config.testExecutorsModule !== null) {
    const file = path.resolve(config.testExecutorsModule);
    const module: unknown = await import(pathToFileURL(file).href);
    return checkModule(module, file, 'ANNEAL_TEST_EXECUTORS');
  }
  // Loaded lazily: a worker started with test executors never pulls in the real ones.
  const module: unknown = await import('./executors/index.ts');
  return checkModule(module, 'apps/worker/src/executors/index.ts', 'executors');
}
