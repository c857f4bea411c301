// Per-run bookkeeping of the weights a run made servable on a shared inference engine, so
// the worker releases them when the run ends (vLLM: unload the run's LoRA adapters; they would
// otherwise stay loaded and be replayed onto every re-admitted replica for the engine's life).
// A view, not an owner: which policy versions exist and when one is released is decided by the
// executor (GRPO: executors/grpo/policy-versions.ts, docs/architecture.md "One GRPO step"); this
// only remembers the names loaded and not yet released, as a safety net for the run's end.
// Isolation (docs/security.md "Isolation between runs"): the engine is shared by every run of
// the worker, so the view admits only the run's own names: every name it loads and every
// adapter a rollout request names starts with `<runId>-` (the executors' names do:
// executors/grpo/setup.ts `servingNames`, the eval's `<runId>-eval-<i>`), or is the shared
// reference the run holds a use of (resources/shared-reference.ts: loaded by its worker, not
// through this view, and never released by it); a request for the base model names no
// adapter. Anything else is a bug that would sample another run's weights (another run's policy,
// another tenant's reference), and fails the step.
import type { InferenceEngine } from '@anneal/engines';

export interface ServedWeights {
  /** The engine as the run sees it: `loadWeights` also records the name. */
  engine: InferenceEngine;
  /** Names loaded through `engine`, in first-load order. */
  names(): string[];
  /** Releases every recorded name (best effort); returns the failures. */
  release(): Promise<Array<{ name: string; error: unknown }>>;
}

/** Refuses a weights name that is not the run's own (see the file comment). */
function checkOwnName(runId: string, name: string, what: string, shared?: string): void {
  if (name.startsWith(`${runId}-`) || (shared !== undefined && name === shared)) return;
  throw new Error(
    `run ${runId}: ${what} '${name}', which is not one of this run's adapter names ` +
      `('${runId}-…'): a run samples only its own weights (docs/security.md "Isolation between runs")`,
  );
}

/** `sharedReference`: the shared reference adapter the run serves, once it does. */
export function trackServedWeights(
  inner: InferenceEngine,
  runId: string,
  sharedReference: () => string | undefined = () => undefined,
): ServedWeights {
  const loaded = new Set<string>();
  const engine: InferenceEngine = {
    sample: async (request, signal) => {
      if (request.model !== undefined)
        checkOwnName(runId, request.model, 'a rollout request names', sharedReference());
      return inner.sample(request, signal);
    },
    async loadWeights(weights) {
      checkOwnName(runId, weights.name, 'weights are loaded as');
      loaded.add(weights.name); // before the call: a partial load still needs releasing
      await inner.loadWeights(weights);
    },
    async releaseWeights(name) {
      await inner.releaseWeights?.(name);
      loaded.delete(name);
    },
    // The engine is shared across runs (cached per endpoint); the run never closes it.
    close: async () => undefined,
  };
  return {
    engine,
    names: () => [...loaded],
    async release() {
      const failures: Array<{ name: string; error: unknown }> = [];
      for (const name of [...loaded]) {
        try {
          await inner.releaseWeights?.(name);
        } catch (error) {
          failures.push({ name, error });
        }
        loaded.delete(name);
      }
      return failures;
    },
  };
}
