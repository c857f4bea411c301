// Per-run bookkeeping of the trainer models a run created on a shared trainer engine, so the
// worker releases them when the run ends (TrainerModel.release: the trainer frees weights,
// gradients and optimizer state; checkpoints stay). The engine lives as long as the worker and
// its session never ends, so without this every run's models stayed on the trainer — 2.7 MiB
// per tiny embedded SFT run, for the worker's life.
import type { TrainerEngine, TrainerModel } from '@anneal/engines';

export interface TrainedModels {
  /** The engine as the run sees it: `createModel` also records the model. */
  engine: TrainerEngine;
  /** Models created through `engine` and not yet released. */
  count(): number;
  /** Releases every recorded model (best effort); returns the failures. */
  release(): Promise<Array<{ id: string; error: unknown }>>;
}

export function trackTrainerModels(inner: TrainerEngine): TrainedModels {
  const created: TrainerModel[] = [];
  const engine: TrainerEngine = {
    get capabilities() {
      return inner.capabilities;
    },
    async createModel(options) {
      const model = await inner.createModel(options);
      created.push(model);
      return model;
    },
    // The engine is shared across runs (cached per endpoint); the run never closes it.
    close: async () => undefined,
  };
  return {
    engine,
    count: () => created.length,
    async release() {
      const failures: Array<{ id: string; error: unknown }> = [];
      for (const model of created.splice(0)) {
        try {
          await model.release?.();
        } catch (error) {
          failures.push({ id: model.id, error });
        }
      }
      return failures;
    },
  };
}
