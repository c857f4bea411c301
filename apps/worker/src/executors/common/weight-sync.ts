// Step phase 7: weight sync — the trainer exports sampler weights (ONNX for the embedded
// trainer, a LoRA adapter for Tinker/vLLM) and the inference engine serves them under the
// run's stable policy name (vLLM: each sync is a new versioned adapter, docs/engines.md "Weight sync").
import type { InferenceEngine, SamplerWeights, TrainerModel } from '@anneal/engines';

export async function syncWeights(
  model: TrainerModel,
  inference: InferenceEngine,
  exportName: string,
  servingName: string,
): Promise<SamplerWeights> {
  const exported = await model.saveWeightsForSampler(exportName);
  const served = { name: servingName, path: exported.path };
  await inference.loadWeights(served);
  return served;
}
