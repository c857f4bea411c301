// Response and error bodies of a vLLM server, field for field as docs/engines.md documents them:
// `new` = v0.10.2+ (`token_ids`, new error envelope), `old` = earlier servers (logprob
// tokens `"token_id:{id}"`, explicit nulls, `{"object":"error",…}` envelope).
import type {
  CompletionChoice,
  CompletionResponse,
  ErrorEnvelopeNew,
  ErrorEnvelopeOld,
  VllmFinishReason,
} from '../../src/vllm/wire.ts';

export type ServerShape = 'new' | 'old';

export interface FixtureChoice {
  tokens: number[];
  logprobs: number[];
  finishReason: VllmFinishReason;
  stopReason?: number | string | null;
}

/** How a reply is written: `tokensAsIds` (`return_tokens_as_token_ids`); `logprobs` false when
 * the request sent none (each choice's `logprobs` is then null:
 * vllm/entrypoints/openai/completion/serving.py@030ea52e request_output_to_completion_response). */
export interface ReplyOptions {
  tokensAsIds: boolean;
  logprobs?: boolean;
}

/** Text a fixture server "decodes" a token to. */
export const fakeTokenText = (id: number): string => `<${id}>`;

export function completionResponse(
  shape: ServerShape,
  model: string,
  prompt: readonly number[],
  choices: readonly FixtureChoice[],
  options: ReplyOptions = { tokensAsIds: true },
): CompletionResponse & Record<string, unknown> {
  const written = choices.map((choice, index) =>
    completionChoice(shape, index, prompt, choice, options),
  );
  return envelope(shape, model, prompt, choices, written);
}

/** Placeholder for the choices of `completionResponseJson` (never in a JSON.stringify output
 * of the other fields, which would escape the NUL). */
const CHOICES_SLOT = '\u0000choices';

/** `JSON.stringify(completionResponse(...))`, byte for byte, without building the per-token
 * objects: the fake's own cost for long rollouts (bench/overhead) is mostly this reply. */
export function completionResponseJson(
  shape: ServerShape,
  model: string,
  prompt: readonly number[],
  choices: readonly FixtureChoice[],
  options: ReplyOptions = { tokensAsIds: true },
): string {
  if (model.includes(CHOICES_SLOT)) {
    return JSON.stringify(completionResponse(shape, model, prompt, choices, options));
  }
  const rest = envelope(shape, model, prompt, choices, []);
  const written = choices.map((choice, index) =>
    completionChoiceJson(shape, index, prompt, choice, options),
  );
  return JSON.stringify({ ...rest, choices: CHOICES_SLOT }).replace(
    JSON.stringify(CHOICES_SLOT),
    () => `[${written.join(',')}]`,
  );
}

function envelope(
  shape: ServerShape,
  model: string,
  prompt: readonly number[],
  choices: readonly FixtureChoice[],
  written: CompletionChoice[],
): CompletionResponse & Record<string, unknown> {
  const completionTokens = choices.reduce((sum, c) => sum + c.tokens.length, 0);
  const body: CompletionResponse & Record<string, unknown> = {
    id: `cmpl-${prompt.length}-${completionTokens}`,
    object: 'text_completion',
    created: 1_760_000_000,
    model,
    choices: written,
    usage: {
      prompt_tokens: prompt.length,
      completion_tokens: completionTokens,
      total_tokens: prompt.length + completionTokens,
      prompt_tokens_details: null,
    },
  };
  // Fields a client must ignore: newer servers add some, older ones send nulls.
  if (shape === 'new') {
    body['service_tier'] = null;
    body['system_fingerprint'] = null;
    body['kv_transfer_params'] = null;
  }
  return body;
}

function completionChoice(
  shape: ServerShape,
  index: number,
  prompt: readonly number[],
  choice: FixtureChoice,
  options: ReplyOptions,
): CompletionChoice & Record<string, unknown> {
  const texts = choice.tokens.map(fakeTokenText);
  const tokenStrings = options.tokensAsIds ? choice.tokens.map((id) => `token_id:${id}`) : texts;
  let offset = 0;
  const offsets = texts.map((text) => (offset += text.length) - text.length);
  const logprobs =
    options.logprobs === false
      ? null
      : {
          text_offset: offsets,
          token_logprobs: [...choice.logprobs],
          tokens: tokenStrings,
          top_logprobs: tokenStrings.map((token, i) => ({ [token]: choice.logprobs[i] as number })),
        };
  const base: CompletionChoice & Record<string, unknown> = {
    index,
    text: texts.join(''),
    logprobs,
    finish_reason: choice.finishReason,
    stop_reason: choice.stopReason ?? null,
    prompt_logprobs: null,
  };
  if (shape === 'new') {
    base.token_ids = [...choice.tokens];
    base.prompt_token_ids = [...prompt];
  }
  return base;
}

/** `JSON.stringify(completionChoice(...))`, field for field in the same order. */
function completionChoiceJson(
  shape: ServerShape,
  index: number,
  prompt: readonly number[],
  choice: FixtureChoice,
  options: ReplyOptions,
): string {
  const texts = choice.tokens.map(fakeTokenText);
  const tokenStrings = options.tokensAsIds ? choice.tokens.map((id) => `token_id:${id}`) : texts;
  let offset = 0;
  const offsets = texts.map((text) => (offset += text.length) - text.length);
  // Token strings are `token_id:<id>` or `<id>`: nothing in them needs escaping.
  let top = '';
  for (let i = 0; i < tokenStrings.length && options.logprobs !== false; i += 1) {
    const logprob = choice.logprobs[i];
    if (i > 0) top += ',';
    top += logprob === undefined ? '{}' : `{"${tokenStrings[i]}":${JSON.stringify(logprob)}}`;
  }
  const fields = [
    `"index":${index}`,
    `"text":${JSON.stringify(texts.join(''))}`,
    options.logprobs === false
      ? '"logprobs":null'
      : `"logprobs":{"text_offset":${JSON.stringify(offsets)},"token_logprobs":${JSON.stringify(choice.logprobs)},"tokens":${JSON.stringify(tokenStrings)},"top_logprobs":[${top}]}`,
    `"finish_reason":${JSON.stringify(choice.finishReason)}`,
    `"stop_reason":${JSON.stringify(choice.stopReason ?? null)}`,
    '"prompt_logprobs":null',
  ];
  if (shape === 'new') {
    fields.push(`"token_ids":${JSON.stringify(choice.tokens)}`);
    fields.push(`"prompt_token_ids":${JSON.stringify(prompt)}`);
  }
  return `{${fields.join(',')}}`;
}

export function errorBody(
  shape: ServerShape,
  status: number,
  type: string,
  message: string,
): ErrorEnvelopeNew | ErrorEnvelopeOld {
  if (shape === 'new') return { error: { message, type, param: null, code: status } };
  return { object: 'error', message, type, param: null, code: status };
}

/** Which vLLM a fake server answers as. `v0.11`: v0.11.x and older (no `load_inplace`, 400 for
 * most adapter load failures, the "maximum context length" wording). `current`: vLLM main after
 * vLLM PR #31326 (`load_inplace`, 500 for most adapter load failures, the renderer's "context
 * length is only" wording). */
export type VllmGeneration = 'v0.11' | 'current';

/** The context-window 400 message. `v0.11` mirrors `vllm/entrypoints/openai/serving_engine.py`
 * `_validate_input` (v0.11.x); `current` mirrors `vllm/renderers/params.py` `TokenizeParams`
 * (main), whose `max_tokens` check lacks a space in the real f-string. */
export function contextOverflowMessage(
  maxModelLen: number,
  prompt: number,
  completion: number,
  generation: VllmGeneration = 'v0.11',
): string {
  if (generation === 'current') {
    if (completion > maxModelLen) {
      return (
        `max_tokens=${completion}cannot be greater than max_model_len=max_total_tokens=` +
        `${maxModelLen}. Please request fewer output tokens. (parameter=max_tokens, value=${completion})`
      );
    }
    return (
      `You passed ${prompt} input tokens and requested ${completion} output tokens. However, the ` +
      `model's context length is only ${maxModelLen} tokens, resulting in a maximum input length ` +
      `of ${maxModelLen - completion} tokens. Please reduce the length of the input prompt. ` +
      `(parameter=input_tokens, value=${prompt})`
    );
  }
  return (
    `This model's maximum context length is ${maxModelLen} tokens. However, you requested ` +
    `${prompt + completion} tokens (${prompt} in the messages, ${completion} in the completion). ` +
    'Please reduce the length of the messages or completion.'
  );
}
