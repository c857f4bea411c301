// bench/overhead's reply-reader thread (threads.ts): reads each vLLM reply it is sent with the
// vLLM client's field extractor and sends the choices back as they are: the extractor reads ids
// into an Int32Array and logprobs into a Float32Array of their own, so their buffers are
// transferred, not copied.
import { parentPort } from 'node:worker_threads';
import type { SampledSequence } from '@anneal/engines';
import { extractCompletion } from '@anneal/engines/testing';

export interface ReadRequest {
  bytes: Uint8Array;
  choices: number;
}
export type ReadReply = SampledSequence[];

const port = parentPort!;
port.on('message', ({ bytes, choices }: ReadRequest) => {
  const sequences = extractCompletion(bytes, choices);
  if (sequences === undefined) throw new Error('the fake reply took the generic path');
  const buffers = sequences.flatMap((s) => {
    if (!(s.tokens instanceof Int32Array) || !(s.logprobs instanceof Float32Array)) {
      throw new Error('the extractor returned arrays, not typed arrays');
    }
    return [s.tokens.buffer as ArrayBuffer, s.logprobs.buffer as ArrayBuffer];
  });
  const reply: ReadReply = sequences;
  port.postMessage(reply, buffers);
});
