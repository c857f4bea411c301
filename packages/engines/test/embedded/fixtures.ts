// Shared helpers for the embedded engine tests (not exported from the package).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ModelConfig, ModelHead } from '../../src/embedded/params.ts';
import { initParams, paramLayout } from '../../src/embedded/params.ts';
import { createRng, normal } from '../../src/embedded/rng.ts';

/** A small model with the byte tokenizer's vocabulary, fast enough for unit tests. */
export function smallConfig(head: ModelHead = 'lm', blockSize = 64): ModelConfig {
  return { vocabSize: 264, blockSize, nLayer: 2, nHead: 2, nEmbd: 32, head };
}

/** GPT-2 init plus noise of scale `spread`, so logits are far from uniform. */
export function randomParams(config: ModelConfig, seed: number, spread = 0.15): Float32Array {
  const layout = paramLayout(config);
  const params = new Float32Array(layout.size);
  initParams(layout, params, seed);
  const rng = createRng(seed + 1000);
  for (let i = 0; i < params.length; i++) params[i]! += spread * normal(rng);
  return params;
}

export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(tmpdir(), 'anneal-embedded-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
