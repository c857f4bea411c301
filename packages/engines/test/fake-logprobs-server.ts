// A one-route fake of a vLLM server's `POST /v1/completions` top-logprobs, for the logprobs-mode
// probe. It mirrors vLLM v0.11+ `vllm/v1/sample/sampler.py` (`Sampler.forward`: raw modes read
// the logits before temperature, processed modes after temperature and top-k/top-p, masked
// tokens −inf) and the completions response of `vllm/entrypoints/openai/protocol.py`
// (`choices[].logprobs.top_logprobs`, keys `token_id:<id>` with `return_tokens_as_token_ids`,
// −inf clamped to −9999, 400 above `--max-logprobs`). The first position's logits are a fixed
// function of the prompt; no model runs.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LogprobsMode } from '@anneal/protocol';

export interface FakeLogprobsServerOptions {
  mode: LogprobsMode;
  /** Vocabulary size of the fake (default 50). */
  vocab?: number;
  /** vLLM's --max-logprobs (default 20). */
  maxLogprobs?: number;
}

/** Logits of the first generated position: peaked, deterministic in the prompt. */
export function fakeLogits(prompt: readonly number[], vocab: number): number[] {
  const seed = prompt.reduce((s, t) => (s * 31 + t) % 9973, 7);
  return Array.from({ length: vocab }, (_, v) => 8 - 0.35 * v + Math.sin(seed + 3 * v));
}

function logSoftmax(z: readonly number[]): number[] {
  const max = Math.max(...z);
  const lse = max + Math.log(z.reduce((s, v) => s + Math.exp(v - max), 0));
  return z.map((v) => v - lse);
}

/** What the server returns for each token at the first position. */
function values(mode: LogprobsMode, z: number[], temperature: number, topK: number): number[] {
  if (mode === 'raw_logits') return z;
  if (mode === 'raw_logprobs') return logSoftmax(z);
  const scaled = z.map((v) => v / (temperature < 1e-5 ? 1 : temperature));
  if (topK > 0) {
    const kth = [...scaled].sort((a, b) => b - a)[topK - 1]!;
    scaled.forEach((v, i) => (scaled[i] = v < kth ? -Infinity : v));
  }
  return mode === 'processed_logits' ? scaled : logSoftmax(scaled);
}

/** The top-`k` alternatives at the first generated position as `mode` reports them, keyed
 * `token_id:<id>` (return_tokens_as_token_ids); the sampled token is the first. */
export function firstPositionTop(
  mode: LogprobsMode,
  prompt: readonly number[],
  sampling: { temperature: number; topK: number },
  k: number,
  vocab: number,
): { sampled: number; value: number; top: Record<string, number> } {
  const v = values(mode, fakeLogits(prompt, vocab), sampling.temperature, sampling.topK);
  const order = v.map((_, i) => i).sort((a, b) => v[b]! - v[a]!);
  const top = Object.fromEntries(
    order.slice(0, k).map((i) => [`token_id:${i}`, Math.max(v[i]!, -9999)]),
  );
  const sampled = order[0]!;
  return { sampled, value: Math.max(v[sampled]!, -9999), top };
}

export class FakeLogprobsServer {
  private readonly server: Server;
  readonly requests: Array<Record<string, unknown>> = [];

  constructor(private readonly options: FakeLogprobsServerOptions) {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const reply = (status: number, json: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(json));
        };
        if (req.method !== 'POST' || req.url !== '/v1/completions')
          return reply(404, { error: { message: 'Not Found', type: 'NotFoundError', code: 404 } });
        const request = JSON.parse(body) as Record<string, unknown>;
        this.requests.push(request);
        const k = Number(request['logprobs'] ?? 0);
        if (k > (this.options.maxLogprobs ?? 20))
          return reply(400, {
            error: {
              message: `Requested sample logprobs of ${k}, which is greater than max allowed: ${this.options.maxLogprobs ?? 20}`,
              type: 'BadRequestError',
              code: 400,
            },
          });
        const { sampled, value, top } = firstPositionTop(
          this.options.mode,
          request['prompt'] as number[],
          {
            temperature: Number(request['temperature'] ?? 1),
            topK: Number(request['top_k'] ?? -1),
          },
          k,
          this.options.vocab ?? 50,
        );
        reply(200, {
          id: 'cmpl-fake',
          object: 'text_completion',
          model: request['model'],
          choices: [
            {
              index: 0,
              text: `<${sampled}>`,
              token_ids: [sampled],
              logprobs: {
                text_offset: [0],
                token_logprobs: [value],
                tokens: [`token_id:${sampled}`],
                top_logprobs: [top],
              },
              finish_reason: 'length',
            },
          ],
        });
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    return closed;
  }
}
