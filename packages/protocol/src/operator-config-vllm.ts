// What a vLLM inference endpoint can load, as pure checks shared by the control plane (refusing
// a run at submission, via resolveRunSpec) and the vLLM client in @anneal/engines (refusing
// weights before any replica is asked), so both say the same thing (docs/engines.md "Errors").

/** vLLM's default `--max-lora-rank`: adapters of a higher rank fail to load. */
export const VLLM_DEFAULT_MAX_LORA_RANK = 16;

/** The part of a vLLM endpoint's operator config the checks read. */
export interface VllmEndpointLimits {
  /** The operator-registered endpoint name. */
  name: string;
  /** The replicas' `--max-lora-rank`; default 16, as vLLM. */
  maxLoraRank?: number;
}

/**
 * Why `endpoint` cannot load a LoRA adapter of rank `rank`, or undefined when it can. Example:
 * "inference endpoint 'gen' loads LoRA adapters up to rank 16 (vLLM --max-lora-rank) but the
 * weights have rank 32: set lora.rank <= 16, or restart vLLM with --max-lora-rank >= 32 and set
 * the endpoint's maxLoraRank".
 */
export function vllmRankIssue(endpoint: VllmEndpointLimits, rank: number): string | undefined {
  const limit = endpoint.maxLoraRank ?? VLLM_DEFAULT_MAX_LORA_RANK;
  if (rank <= limit) return undefined;
  return (
    `inference endpoint '${endpoint.name}' loads LoRA adapters up to rank ${limit} (vLLM ` +
    `--max-lora-rank) but the weights have rank ${rank}: set lora.rank <= ${limit}, or restart ` +
    `vLLM with --max-lora-rank >= ${rank} and set the endpoint's maxLoraRank`
  );
}

/** What a trainer's sampler weights are: a LoRA adapter (SkyRL JAX and FSDP, hosted Tinker) or
 * a full merged model (config.json without adapter_config.json). */
export type SamplerWeightsFormat = 'lora' | 'full';

/**
 * Why `endpoint` cannot serve sampler weights of `format`, or undefined when it can: Anneal's
 * vLLM endpoints hot-load weights only as LoRA adapters (`/v1/load_lora_adapter`), so full
 * weights need another deployment.
 */
export function vllmWeightsFormatIssue(
  endpoint: Pick<VllmEndpointLimits, 'name'>,
  format: SamplerWeightsFormat,
): string | undefined {
  if (format === 'lora') return undefined;
  return (
    `inference endpoint '${endpoint.name}' hot-loads LoRA adapters only, and these sampler ` +
    'weights are a full model (config.json, no adapter_config.json); use a trainer that ' +
    'exports LoRA adapters'
  );
}
