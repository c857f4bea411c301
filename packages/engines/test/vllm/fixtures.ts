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

/** The fake's logprob of sampling `id`: a float32 value, as vLLM's are (its sampler's
 * `compute_logprobs` is a float32 log_softmax, vllm/v1/sample/sampler.py@3e342658), spread from
 * about -4.5e-5 (a confident token) to -12. */
export const fakeLogprob = (id: number): number => Math.fround(-Math.exp(((id % 251) - 200) / 20));

/** A float as vLLM's replies write it. FastAPI renders them with `json.dumps`, which writes a
 * Python float with `float.__repr__` (CPython Lib/json/encoder.py@e6239a3a `floatstr`): the
 * shortest digits that read back as the same double — the digits of JavaScript's own shortest
 * form — with `.0` on an integral value (`-0.0`, `-9999.0`) and an exponent of at least two
 * digits outside 1e-4 ≤ |x| < 1e16 (`-4.5399931e-05`). For a float32 value that is up to 17
 * significant digits (`-1.2345678806304932`). */
export function pythonFloatText(x: number): string {
  if (!Number.isFinite(x)) throw new RangeError(`json.dumps refuses ${x} (allow_nan=False)`);
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mantissa, exponentText] = x.toExponential().split('e') as [string, string];
  const exponent = Number(exponentText);
  const sign = x < 0 ? '-' : '';
  const digits = mantissa.replace('-', '').replace('.', '');
  if (exponent < -4 || exponent >= 16) {
    const lead = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const magnitude = String(Math.abs(exponent)).padStart(2, '0');
    return `${sign}${lead}e${exponent < 0 ? '-' : '+'}${magnitude}`;
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0');
  return `${sign}${whole}.${digits.slice(exponent + 1) || '0'}`;
}

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

/** `completionResponse(...)` as vLLM writes it (floats as `pythonFloatText`, the rest as
 * JSON.stringify writes it), without building the per-token objects: the fake's own cost for
 * long rollouts (bench/overhead) is mostly this reply. */
export function completionResponseJson(
  shape: ServerShape,
  model: string,
  prompt: readonly number[],
  choices: readonly FixtureChoice[],
  options: ReplyOptions = { tokensAsIds: true },
): string {
  const rest = envelope(shape, model, prompt, choices, []);
  const written = choices.map((choice, index) =>
    completionChoiceJson(shape, index, prompt, choice, options),
  );
  const members = Object.entries(rest).flatMap(([key, value]) =>
    value === undefined
      ? []
      : [
          `${JSON.stringify(key)}:${key === 'choices' ? `[${written.join(',')}]` : JSON.stringify(value)}`,
        ],
  );
  return `{${members.join(',')}}`;
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
    top += logprob === undefined ? '{}' : `{"${tokenStrings[i]}":${pythonFloatText(logprob)}}`;
  }
  const fields = [
    `"index":${index}`,
    `"text":${JSON.stringify(texts.join(''))}`,
    options.logprobs === false
      ? '"logprobs":null'
      : `"logprobs":{"text_offset":${JSON.stringify(offsets)},"token_logprobs":[${choice.logprobs.map(pythonFloatText).join(',')}],"tokens":${JSON.stringify(tokenStrings)},"top_logprobs":[${top}]}`,
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
