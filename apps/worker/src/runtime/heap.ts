// V8's heap growing factor for the process a worker runs in (the worker's
// `heapGrowingPercent`, ANNEAL_HEAP_GROWING_PERCENT). After each full (mark-compact) collection
// V8 sets the next one's trigger at the surviving heap times a factor it derives from its own
// estimates of collection and allocation speed (V8 src/heap/heap-controller.cc,
// MemoryController::GrowingFactor; `--heap-growing-percent` replaces it and is read at every
// limit computation, so it can be set once the process runs). A worker allocates little on the
// JS heap and much as ArrayBuffers — replies, rollouts, trainer tensors — which count against
// the same limit, so V8 picks a small factor for it (1.1–1.5 in bench/overhead) and collects
// often; docs/performance.md "Orchestrator overhead: the profiler out of the measure" has what a
// fixed factor measured.
import { setFlagsFromString } from 'node:v8';

/** The percent this module last set; 0 = V8's own factor (its default). */
let current = 0;

/** Sets V8's heap growing factor for this whole process to 1 + percent/100, or with 0 gives V8
 * its own choice back. The last worker started in a process sets it for all of them. */
export function setHeapGrowingPercent(percent: number): void {
  if (!Number.isInteger(percent) || percent < 0) {
    throw new RangeError(`heap growing percent must be an integer >= 0, got ${percent}`);
  }
  if (percent === current) return;
  setFlagsFromString(`--heap-growing-percent=${percent}`);
  current = percent;
}
