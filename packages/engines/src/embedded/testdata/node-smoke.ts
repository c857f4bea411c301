// Run by worker-threads.test.ts as `node --import tsx node-smoke.ts <dir>`: the trainer and the
// sampler start their TypeScript worker threads outside vitest too.
import { EmbeddedInferenceEngine } from '../onnx-sampler.ts';
import { EmbeddedTrainer } from '../trainer.ts';

const dir = process.argv[2];
if (!dir) throw new Error('usage: node-smoke.ts <artifact dir>');
const trainer = new EmbeddedTrainer({
  artifactDir: dir,
  threads: 1,
  baseModels: { tiny: { vocabSize: 264, blockSize: 32, nLayer: 1, nHead: 2, nEmbd: 16 } },
});
const sampler = new EmbeddedInferenceEngine({ threads: 1 });
try {
  const model = await trainer.createModel({ baseModel: 'tiny', loraRank: 1 });
  const tokens = [262, 104, 105, 263];
  const result = await model.forward(
    [
      {
        modelInput: tokens,
        lossFnInputs: {
          target_tokens: Int32Array.from(tokens),
          weights: new Float32Array(4).fill(1),
        },
      },
    ],
    'cross_entropy',
  );
  await sampler.loadWeights(await model.saveWeightsForSampler('smoke'));
  const [seq] = await sampler.sample({
    prompt: tokens,
    n: 1,
    maxTokens: 3,
    temperature: 1,
    topP: 1,
    seed: 1,
  });
  console.log(JSON.stringify({ loss: result.metrics['loss:sum'], sampled: seq?.tokens.length }));
} finally {
  await sampler.close();
  await trainer.close();
}
