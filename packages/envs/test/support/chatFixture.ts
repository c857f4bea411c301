// OpenAI-compatible chat completions fixture (POST /v1/chat/completions): the documented
// response shape {id, object: 'chat.completion', created, model, choices: [{index, message:
// {role, content}, finish_reason}], usage}, and the error envelope {error: {message, type, param, code}}.
import { sendJson, startFixture } from './httpFixture.ts';
import type { Fixture } from './httpFixture.ts';

export interface ChatRequestBody {
  model: string;
  messages: Array<{ role: string; content: string }>;
  n?: number;
  temperature?: number;
  max_tokens?: number;
}

/** `reply` returns the contents of the choices, or a number for an HTTP error status. */
export function startChatFixture(
  reply: (body: ChatRequestBody) => string[] | number,
): Promise<Fixture> {
  return startFixture((req, raw, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      return sendJson(res, 404, {
        error: { message: 'not found', type: 'NotFoundError', param: null, code: 404 },
      });
    }
    const body = JSON.parse(raw) as ChatRequestBody;
    const out = reply(body);
    if (typeof out === 'number') {
      return sendJson(res, out, {
        error: { message: `fixture error ${out}`, type: 'BadRequestError', param: null, code: out },
      });
    }
    sendJson(res, 200, {
      id: 'chatcmpl-fixture',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: body.model,
      choices: out.map((content, index) => ({
        index,
        message: { role: 'assistant', content, tool_calls: [] },
        logprobs: null,
        finish_reason: 'stop',
      })),
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    });
  });
}
