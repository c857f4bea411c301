// bench/overhead's thread-scaling measure of the orchestrator's largest per-token stage, reading
// vLLM replies: the step's policy replies (16 choices × 4096 tokens each, as the fake vLLM writes
// them) read on this thread, then by 1 and 2 reader threads (threads.worker.ts) that send the
// choices back as the extractor read them, their typed arrays transferred: the client's
// SampledSequence as it is, nothing for this thread to unpack. Per setting: tokens per CPU-second (process.cpuUsage: every thread), tokens per wall
// second, and this thread's busy time. CPU per token staying flat from 1 to 2 threads is what
// lets the stage scale with cores; wall throughput shows whether the machine had them free.
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { completionResponseJson, extractCompletion, fakeLogprob } from '@anneal/engines/testing';
import type { ReadReply } from './threads.worker.ts';

export interface ThreadFigures {
  /** 0 = read on this thread. */
  threads: number;
  tokensPerCpuSecond: number;
  tokensPerWallSecond: number;
  mainBusyMs: number;
}

function reply(choices: number, tokens: number, seed: number): Uint8Array {
  const body = completionResponseJson(
    'new',
    'qwen3-base',
    [1, 2, 3],
    Array.from({ length: choices }, (_, c) => {
      const ids = Array.from({ length: tokens }, (_, t) => (31 * (c + seed) + 7 * t) % 32_000);
      return {
        tokens: ids,
        logprobs: ids.map(fakeLogprob),
        finishReason: 'length',
      };
    }),
  );
  return new TextEncoder().encode(body);
}

export async function measureReaderThreads(
  replies: number,
  choices: number,
  tokens: number,
): Promise<ThreadFigures[]> {
  const bodies = Array.from({ length: 4 }, (_, seed) => reply(choices, tokens, seed));
  const total = replies * choices * tokens;
  const figures: ThreadFigures[] = [];
  const measure = async (threads: number, run: () => Promise<void>) => {
    await run(); // warm-up
    const cpu = process.cpuUsage();
    const busy = performance.eventLoopUtilization();
    const start = performance.now();
    await run();
    const wall = (performance.now() - start) / 1000;
    const used = process.cpuUsage(cpu);
    figures.push({
      threads,
      tokensPerCpuSecond: total / ((used.user + used.system) / 1e6),
      tokensPerWallSecond: total / wall,
      mainBusyMs: performance.eventLoopUtilization(busy).active,
    });
  };
  await measure(0, async () => {
    for (let r = 0; r < replies; r += 1) {
      // one reply at a time, yielding between them as the event loop does between replies
      if (extractCompletion(bodies[r % bodies.length]!, choices) === undefined) {
        throw new Error('the fake reply took the generic path');
      }
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  });
  for (const threads of [1, 2]) {
    const workers = Array.from(
      { length: threads },
      () =>
        new Worker(new URL('./threads-shim.mjs', import.meta.url), {
          workerData: { entry: new URL('./threads.worker.ts', import.meta.url).href },
        }),
    );
    try {
      const next = (worker: Worker) =>
        new Promise<ReadReply>((resolve, reject) => {
          worker.once('message', resolve);
          worker.once('error', reject);
        });
      await measure(threads, async () => {
        // each thread reads every threads-th reply, one in flight per thread
        await Promise.all(
          workers.map(async (worker, w) => {
            for (let r = w; r < replies; r += threads) {
              const answer = next(worker);
              worker.postMessage({ bytes: bodies[r % bodies.length], choices });
              const read = await answer;
              if (read.length !== choices || read.some((s) => s.tokens.length !== tokens)) {
                throw new Error('choices lost');
              }
              worker.removeAllListeners('error');
            }
          }),
        );
      });
    } finally {
      await Promise.all(workers.map((w) => w.terminate()));
    }
  }
  return figures;
}
