// The vLLM endpoint checks shared with the control plane's submission check (resolveRunSpec in
// @anneal/protocol): one wording whether a run is refused at submission or its weights at sync.
export {
  VLLM_DEFAULT_MAX_LORA_RANK,
  vllmRankIssue,
  vllmWeightsFormatIssue,
} from '@anneal/protocol';
export type { SamplerWeightsFormat, VllmEndpointLimits } from '@anneal/protocol';
