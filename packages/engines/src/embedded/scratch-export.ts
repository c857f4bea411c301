// A throwaway ONNX export of a tiny embedded model (random initial weights), for checks that
// must load weights on the embedded sampler server the way a run does (vllm/lora-exercise.ts).
import { exportOnnx } from './onnx-export.ts';
import { initParams, paramLayout } from './params.ts';
import type { ModelConfig } from './params.ts';

/** Byte-tokenizer vocabulary, one small block: loads and samples in milliseconds. */
const SCRATCH_CONFIG: ModelConfig = {
  vocabSize: 264,
  blockSize: 8,
  nLayer: 1,
  nHead: 1,
  nEmbd: 8,
  head: 'lm',
};

export async function writeScratchExport(dir: string): Promise<void> {
  const layout = paramLayout(SCRATCH_CONFIG);
  const params = new Float32Array(layout.size);
  initParams(layout, params, 0);
  await exportOnnx(dir, SCRATCH_CONFIG, params);
}
