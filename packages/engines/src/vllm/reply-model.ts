// Which model served a completion, as the reply says (docs/security.md "Isolation between
// runs"). vLLM answers with `model_name(lora_request)`: the name of the LoRA adapter the request
// was resolved to and scheduled with, or the base model's served name without one
// (vllm/entrypoints/openai/serving_completion.py@00463e62 `create_completion`,
// vllm/entrypoints/openai/serving_models.py@075e9ba8 `model_name`), not the request's text
// echoed back. A reply naming another adapter than the request is refused: its tokens come from
// someone else's weights.
import { ENGINE_ERROR_CODES, EngineError, type EngineErrorContext } from '../http/errors.ts';
import type { HttpReply } from '../http/request.ts';

/** How far into the body the envelope's `model` is looked for before the whole reply is parsed
 * (vLLM writes `id, object, created, model` before `choices`). */
const ENVELOPE_BYTES = 4096;

const MODEL_FIELD = /"model"\s*:\s*"((?:[^"\\]|\\.)*)"/;

/** The reply's `model`, read from the envelope before `choices` without parsing the choices;
 * undefined when the reply has none. */
export function replyModel(reply: HttpReply): string | undefined {
  if (reply.bytes !== undefined) {
    const head = Buffer.from(
      reply.bytes.buffer,
      reply.bytes.byteOffset,
      Math.min(reply.bytes.byteLength, ENVELOPE_BYTES),
    ).toString('utf8');
    const choices = head.indexOf('"choices"');
    const match = choices < 0 ? null : MODEL_FIELD.exec(head.slice(0, choices));
    if (match !== null) return JSON.parse(`"${match[1] ?? ''}"`) as string;
  }
  const json = reply.json as { model?: unknown } | undefined;
  return typeof json?.model === 'string' ? json.model : undefined;
}

/** Throws ANNEAL_ERR_ENGINE_ADAPTER_MISMATCH unless the reply names `expected` (never retried:
 * the step fails). */
export function checkReplyModel(
  reply: HttpReply,
  expected: string,
  context: EngineErrorContext,
): void {
  const served = replyModel(reply);
  if (served === expected) return;
  throw new EngineError(
    ENGINE_ERROR_CODES.adapterMismatch,
    context,
    `the completion was requested from '${expected}' but the reply says it was served by ` +
      `${served === undefined ? 'no model' : `'${served}'`}: another adapter's weights may have ` +
      'generated it (docs/security.md "Isolation between runs")',
  );
}
