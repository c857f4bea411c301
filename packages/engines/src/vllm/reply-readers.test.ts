// Reply-reader threads (`readerThreads`): completion replies read on other threads from the
// pooled buffers' shared memory give what the event loop's reading gives; a reply the extractor
// does not take goes to the generic path; a reply not in shared memory, or one arriving after
// the threads ended, is read on the event loop. The threads start from the TypeScript sources
// here (worker-shim.mjs registers tsx), as they do from dist/ in the images.
import { afterEach, describe, expect, it } from 'vitest';
import type { SampleRequest } from '../types.ts';
import { VllmInferenceEngine } from './client.ts';
import { resolveVllmConfig } from './config.ts';
import { ReplyReaders } from './reply-readers.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';
import { plainSequences } from '../../test/plain-sequences.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

const request = (seed: number, logprobs: boolean): SampleRequest => ({
  prompt: [5, 6, 7],
  n: 16,
  maxTokens: 512, // ~90 kB a reply without logprobs, ~500 kB with: both read into the pool
  temperature: 1,
  topP: 1,
  seed,
  logprobs,
});

/** A one-choice reply as vLLM writes it; `key` renames finish_reason (an escaped key: the
 * extractor leaves such a reply to the generic path). */
function reply(key = 'finish_reason'): Uint8Array {
  const text =
    `{"id":"x","choices":[{"index":0,"text":"ab","logprobs":{"token_logprobs":[-0.5,-1.5],` +
    `"tokens":["token_id:10","token_id:11"]},"${key}":"stop","token_ids":[10,11]}],"usage":null}`;
  const shared = new Uint8Array(new SharedArrayBuffer(text.length));
  shared.set(new TextEncoder().encode(text));
  return shared;
}

describe('vLLM reply-reader threads', () => {
  it('read what the event loop reads, for replies with and without logprobs', async () => {
    const fake = await FakeVllmServer.start();
    const engine = (readerThreads: number) => {
      const created = new VllmInferenceEngine({
        name: `readers-${readerThreads}`,
        replicas: [fake.url],
        model: 'base-model',
        healthCheckIntervalMs: 0,
        readerThreads,
      });
      open.push(created);
      return created;
    };
    open.push(fake);
    const [threaded, here] = [engine(2), engine(0)];
    const requests = [1, 2, 3, 4].flatMap((seed) => [request(seed, true), request(seed, false)]);
    const fromThreads = await Promise.all(requests.map((r) => threaded.sample(r)));
    const fromLoop = await Promise.all(requests.map((r) => here.sample(r)));
    expect(fromThreads.map(plainSequences)).toEqual(fromLoop.map(plainSequences));
    expect(threaded.stats().readers).toEqual({ onThreads: requests.length, here: 0 });
    expect(here.stats().readers).toBeNull();
    expect(fromThreads[0]![0]!.tokens).toBeInstanceOf(Int32Array); // transferred, not cloned
    expect(fromThreads[0]![0]!.logprobs).toBeInstanceOf(Float32Array);
    expect(fromThreads[1]![0]!.logprobs).toBeNull();
  });

  it('leave a reply the extractor does not take to the generic path, and unshared bytes here', async () => {
    const readers = new ReplyReaders(1, 'direct');
    open.push(readers);
    const read = await readers.read(reply(), 1, true);
    expect(read.kind).toBe('read');
    expect(read.kind === 'read' && plainSequences(read.sequences)).toEqual([
      { tokens: [10, 11], logprobs: [-0.5, -1.5], finishReason: 'stop' },
    ]);
    expect(await readers.read(reply('finish\\u005freason'), 1, true)).toEqual({ kind: 'generic' });
    expect(await readers.read(new TextEncoder().encode('{}'), 1, true)).toEqual({ kind: 'here' });
    await readers.close();
    expect(await readers.read(reply(), 1, true)).toEqual({ kind: 'here' });
    expect(readers.stats()).toEqual({ onThreads: 2, here: 2 });
  });

  it('are an integer count from 0 to 64 (0 by default)', () => {
    const base = { name: 'e', replicas: ['http://x:1'], model: 'm' };
    expect(resolveVllmConfig(base).readerThreads).toBe(0);
    expect(resolveVllmConfig({ ...base, readerThreads: 4 }).readerThreads).toBe(4);
    for (const readerThreads of [-1, 1.5, 65]) {
      expect(() => resolveVllmConfig({ ...base, readerThreads })).toThrow(
        `vLLM endpoint 'e': \`readerThreads\` must be an integer from 0 to 64, got ${readerThreads}`,
      );
    }
  });
});
