// A thread that reads vLLM completion replies for reply-readers.ts: the bytes arrive as a view of
// the pooled buffer's shared memory (http/byte-pool.ts) and are read where they lie; the
// extractor's sequences go back with their typed arrays transferred, not copied. A reply the
// extractor does not take comes back as null: the client parses it whole on its own thread.
import { serveRpc } from '../embedded/worker-rpc.ts';
import { extractCompletion } from './fast-parse.ts';

export interface ReplyReadRequest {
  bytes: Uint8Array;
  choices: number;
  withLogprobs: boolean;
}

serveRpc((payload) => {
  const { bytes, choices, withLogprobs } = payload as ReplyReadRequest;
  const sequences = extractCompletion(bytes, choices, withLogprobs) ?? null;
  const transfer: ArrayBuffer[] = [];
  for (const sequence of sequences ?? []) {
    for (const values of [sequence.tokens, sequence.logprobs]) {
      // the extractor's own exact-length copies; arrays (older servers' ids) are cloned
      if (ArrayBuffer.isView(values) && values.buffer instanceof ArrayBuffer) {
        transfer.push(values.buffer);
      }
    }
  }
  return { result: sequences, transfer };
});
