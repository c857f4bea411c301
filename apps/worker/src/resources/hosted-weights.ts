// Hosted Tinker training with your own vLLM: the service keeps sampler exports to itself (there
// is no shared checkpoint directory), so before vLLM can load an export the worker downloads its
// archive (`training_runs/{id}/checkpoints/sampler_weights/{name}/archive`, a signed URL) into the
// vLLM endpoint's adapter storage; the vLLM engine then unpacks and loads it like a SkyRL archive
// (docs/engines.md "Hosted Tinker"). Wraps the run's inference engine; the shared engine is not
// changed for other runs.
import type { InferenceEngine, ReleaseOptions, SamplerWeights } from '@anneal/engines';

/** Downloads the export at a `tinker://` path; resolves with the local archive's path. */
export type ArchiveFetcher = (samplerPath: string) => Promise<string>;

export function withDownloadedSamplerWeights(
  inner: InferenceEngine,
  fetchArchive: ArchiveFetcher,
): InferenceEngine {
  return {
    sample: (request, signal) => inner.sample(request, signal),
    async loadWeights(weights: SamplerWeights) {
      if (!weights.path.startsWith('tinker://')) return inner.loadWeights(weights);
      const local = await fetchArchive(weights.path);
      await inner.loadWeights({ name: weights.name, path: local, downloaded: true });
    },
    ...(inner.releaseWeights && {
      releaseWeights: (name: string, options?: ReleaseOptions) =>
        inner.releaseWeights!(name, options),
    }),
    close: () => inner.close(),
  };
}
