// JSON shapes of the vLLM OpenAI-compatible server that Anneal uses (docs/engines.md).
// Response fields are typed loosely (`| null`, optional): older servers send unrequested
// fields as explicit nulls and newer ones add fields; unknown fields are ignored.

/** Body of `POST /v1/completions` (token-id prompt, one prompt per request). */
export interface CompletionRequest {
  model: string;
  prompt: number[];
  n: number;
  /** Always set: vLLM's default is 16. */
  max_tokens: number;
  temperature: number;
  top_p: number;
  /** Sent explicitly, neutral: vLLM fills every sampling field a request leaves out from the
   * model's generation_config.json (Qwen3: top_k 20), which would silently truncate rollouts. */
  top_k: -1;
  min_p: 0;
  repetition_penalty: 1;
  seed?: number;
  stop_token_ids?: number[];
  /** Top-k alternatives per token; the sampled token's logprob is always returned. Left out,
   * no logprobs at all (each choice's `logprobs` is null). */
  logprobs?: number;
  /** v0.10.2+: each choice carries `token_ids` and `prompt_token_ids`. */
  return_token_ids: true;
  /** Older servers: logprob token strings become `"token_id:{id}"`. Ignored where unknown. */
  return_tokens_as_token_ids: true;
  skip_special_tokens: false;
  /** Only to a server run with `--scheduling-policy priority`: lower runs first. */
  priority?: number;
}

export interface CompletionLogprobs {
  text_offset?: number[] | null;
  token_logprobs?: Array<number | null> | null;
  tokens?: string[] | null;
  top_logprobs?: Array<Record<string, number> | null> | null;
}

export type VllmFinishReason = 'stop' | 'length' | 'abort' | 'repetition';

export interface CompletionChoice {
  index: number;
  text?: string | null;
  logprobs?: CompletionLogprobs | null;
  finish_reason?: VllmFinishReason | null;
  stop_reason?: string | number | null;
  token_ids?: number[] | null;
  prompt_token_ids?: number[] | null;
  prompt_logprobs?: unknown;
}

export interface CompletionResponse {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: CompletionChoice[];
  usage?: {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    prompt_tokens_details?: unknown;
  } | null;
}

/** v0.10.1+ error envelope. */
export interface ErrorEnvelopeNew {
  error: { message: string; type: string; param: string | null; code: number };
}

/** Older error envelope. */
export interface ErrorEnvelopeOld {
  object: 'error';
  message: string;
  type: string;
  param: string | null;
  code: number;
}

/** `--api-key` failures (401). */
export interface UnauthorizedBody {
  error: 'Unauthorized';
}

export interface LoadLoraAdapterRequest {
  lora_name: string;
  lora_path: string;
  load_inplace?: boolean;
}

export interface UnloadLoraAdapterRequest {
  lora_name: string;
}

export interface TokenizeRequest {
  model: string;
  prompt: string;
  add_special_tokens?: boolean;
}

export interface TokenizeResponse {
  count: number;
  max_model_len: number;
  tokens: number[];
  token_strs?: string[] | null;
}

export interface DetokenizeRequest {
  model: string;
  tokens: number[];
}

export interface DetokenizeResponse {
  prompt: string;
}
