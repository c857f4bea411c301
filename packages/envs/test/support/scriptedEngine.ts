// A deterministic test double of InferenceEngine: a script maps the decoded context to the
// text the "model" generates next. It honours stop tokens and maxTokens like vLLM (the stop
// token is the last returned token) and returns a logprob per token.
import { ByteTokenizer } from '@anneal/engines';
import type {
  InferenceEngine,
  SampleRequest,
  SampledSequence,
  SamplerWeights,
} from '@anneal/engines';

export type Script = (context: string, sampleIndex: number, request: SampleRequest) => string;

/** Fake sampling logprob of a token, distinct per position so alignment can be checked. */
export function fakeLogprob(token: number, position: number): number {
  return -((token % 13) + 1) / 10 - position / 1000;
}

export class ScriptedEngine implements InferenceEngine {
  readonly tokenizer = new ByteTokenizer();
  readonly requests: SampleRequest[] = [];
  inFlight = 0;
  maxInFlight = 0;

  constructor(private readonly script: Script) {}

  async sample(request: SampleRequest, signal?: AbortSignal): Promise<SampledSequence[]> {
    this.requests.push({ ...request, prompt: [...request.prompt] });
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await new Promise((resolve) => setImmediate(resolve)); // let concurrent requests overlap
      signal?.throwIfAborted();
      const context = this.tokenizer.decode(request.prompt);
      return Array.from({ length: request.n }, (_, k) =>
        this.one(this.script(context, k, request), request),
      );
    } finally {
      this.inFlight--;
    }
  }

  private one(text: string, request: SampleRequest): SampledSequence {
    const all = this.tokenizer.encode(text);
    const stops = new Set(request.stopTokenIds ?? []);
    const stopAt = all.findIndex((t) => stops.has(t));
    const untilStop = stopAt >= 0 ? all.slice(0, stopAt + 1) : all;
    const tokens = untilStop.slice(0, request.maxTokens);
    const finishReason =
      tokens.length < untilStop.length ? 'length' : stopAt >= 0 ? 'stop' : 'length';
    const offset = request.prompt.length;
    return { tokens, logprobs: tokens.map((t, i) => fakeLogprob(t, offset + i)), finishReason };
  }

  loadWeights(_weights: SamplerWeights): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
