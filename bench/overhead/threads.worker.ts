// bench/overhead's reply-reader thread (threads.ts): reads each vLLM reply it is sent with the
// vLLM client's field extractor and sends the choices back as typed arrays (transferred, not
// copied): ids as Int32Array, logprobs as Float64Array (the exact values JSON.parse reads).
import { parentPort } from 'node:worker_threads';
import { extractCompletion } from '@anneal/engines/testing';

export interface ReadRequest {
  bytes: Uint8Array;
  choices: number;
}
export interface ReadReply {
  ids: Int32Array;
  logprobs: Float64Array;
  /** Tokens of each choice, in order. */
  lengths: Int32Array;
}

const port = parentPort!;
port.on('message', ({ bytes, choices }: ReadRequest) => {
  const sequences = extractCompletion(bytes, choices);
  if (sequences === undefined) throw new Error('the fake reply took the generic path');
  const total = sequences.reduce((n, s) => n + s.tokens.length, 0);
  const ids = new Int32Array(total);
  const logprobs = new Float64Array(total);
  const lengths = new Int32Array(sequences.length);
  let at = 0;
  sequences.forEach((s, c) => {
    ids.set(s.tokens, at);
    logprobs.set(s.logprobs!, at);
    lengths[c] = s.tokens.length;
    at += s.tokens.length;
  });
  const reply: ReadReply = { ids, logprobs, lengths };
  port.postMessage(reply, [ids.buffer, logprobs.buffer, lengths.buffer]);
});
