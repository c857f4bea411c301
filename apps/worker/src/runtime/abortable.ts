// A run's engines as its executor sees them, abandoned the moment the run is cancelled (or lost):
// an executor checks its stop signal only at step boundaries, so without this a cancel sent
// during a huge step waited for the step to end. Sampling gets the abort signal itself (vLLM's
// request is aborted, the ONNX sampler stops generating); every other engine call (trainer
// operations, reward scoring) rejects at once with an AbortError while the engine finishes it in
// the background — the embedded trainer's threads until the operation ends, a remote trainer's
// future is no longer polled by this run. The executor unwinds through the rejection and the
// runtime settles the run as cancelled (runtime/process-run.ts).
import type { InferenceEngine, RewardScorer, TrainerEngine, TrainerModel } from '@anneal/engines';
import type { RunResources } from '../executors/types.ts';

export function abortError(signal: AbortSignal): Error {
  const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason);
  const error = new Error(`run stopping: ${reason}`);
  error.name = 'AbortError';
  return error;
}

/** Callbacks waiting on a run's signal behind one listener: a run has many engine calls in
 * flight at once (every rollout's sample), and one listener each would pass EventTarget's 10 and
 * warn MaxListenersExceededWarning. */
const waiting = new WeakMap<AbortSignal, Set<() => void>>();

/** Calls `onAbort` when `signal` aborts, unless the returned function was called first. */
function whenAborted(signal: AbortSignal, onAbort: () => void): () => void {
  let callbacks = waiting.get(signal);
  if (callbacks === undefined) {
    const created = new Set<() => void>();
    waiting.set(signal, created);
    signal.addEventListener(
      'abort',
      () => {
        waiting.delete(signal);
        for (const callback of created) callback();
        created.clear();
      },
      { once: true },
    );
    callbacks = created;
  }
  callbacks.add(onAbort);
  const registered = callbacks;
  return () => registered.delete(onAbort);
}

/** `promise`, or an AbortError as soon as `signal` aborts (the promise's own outcome is then
 * dropped, never an unhandled rejection). */
export function raceAbort<T>(signal: AbortSignal, promise: Promise<T>): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(abortError(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const forget = whenAborted(signal, () => reject(abortError(signal)));
    promise.then(
      (value) => {
        forget();
        resolve(value);
      },
      (error: unknown) => {
        forget();
        reject(error);
      },
    );
  });
}

/** Every method of `target` that returns a promise races it against `signal`. */
function abortableMethods<T extends object>(target: T, signal: AbortSignal): T {
  return new Proxy(target, {
    get(object, key) {
      const value = Reflect.get(object, key, object) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result = (value as (...a: unknown[]) => unknown).apply(object, args);
        return result instanceof Promise ? raceAbort(signal, result) : result;
      };
    },
  });
}

function abortableInference(engine: InferenceEngine, signal: AbortSignal): InferenceEngine {
  const inner = abortableMethods(engine, signal);
  return new Proxy(inner, {
    get(object, key) {
      if (key !== 'sample') return Reflect.get(object, key, object) as unknown;
      const sample: InferenceEngine['sample'] = (request, own) =>
        object.sample(request, own ? AbortSignal.any([own, signal]) : signal);
      return sample;
    },
  });
}

function abortableTrainer(trainer: TrainerEngine, signal: AbortSignal): TrainerEngine {
  return new Proxy(trainer, {
    get(object, key) {
      if (key !== 'createModel') return Reflect.get(object, key, object) as unknown;
      const createModel: TrainerEngine['createModel'] = async (options) =>
        abortableMethods<TrainerModel>(
          await raceAbort(signal, object.createModel(options)),
          signal,
        );
      return createModel;
    },
  });
}

/** The resources of one run with its engines abandoned when `signal` aborts. */
export function abortableResources(resources: RunResources, signal: AbortSignal): RunResources {
  return {
    ...resources,
    inference: abortableInference(resources.inference, signal),
    trainer: abortableTrainer(resources.trainer, signal),
    ...(resources.referenceInference && {
      referenceInference: abortableInference(resources.referenceInference, signal),
    }),
    ...(resources.rewardScorer && {
      rewardScorer: abortableMethods<RewardScorer>(resources.rewardScorer, signal),
    }),
  };
}
