// Trainer compute thread: forward (+ backward) of a shard of a batch. Weights live in a
// SharedArrayBuffer shared by every thread (the main thread updates them between steps, never
// during a pass); each thread accumulates gradients into its own SharedArrayBuffer.
import type { LossFn, LossFnConfig } from '../types.ts';
import type { BatchOutput } from './compute.ts';
import { runBatch } from './compute.ts';
import type { CheckedDatum } from './losses.ts';
import { Transformer } from './model.ts';
import type { ModelConfig } from './params.ts';
import { serveRpc } from './worker-rpc.ts';

export type TrainMessage =
  | {
      type: 'register';
      modelId: string;
      config: ModelConfig;
      params: SharedArrayBuffer;
      grads: SharedArrayBuffer;
    }
  | { type: 'unregister'; modelId: string }
  | {
      type: 'run';
      modelId: string;
      data: CheckedDatum[];
      lossFn: LossFn;
      config: LossFnConfig;
      backward: boolean;
    };

const models = new Map<string, { model: Transformer; grads: Float32Array }>();

serveRpc((payload) => {
  const message = payload as TrainMessage;
  switch (message.type) {
    case 'register':
      models.set(message.modelId, {
        model: new Transformer(message.config, new Float32Array(message.params)),
        grads: new Float32Array(message.grads),
      });
      return { result: null };
    case 'unregister':
      models.delete(message.modelId);
      return { result: null };
    case 'run': {
      const entry = models.get(message.modelId);
      if (!entry) throw new Error(`model ${message.modelId} is not registered on this thread`);
      const grads = message.backward ? entry.grads : null;
      const result: BatchOutput = runBatch(
        entry.model,
        message.data,
        message.lossFn,
        message.config,
        grads,
      );
      const transfer = result.outputs.flatMap((o) => [o.logprobs.buffer, o.elementwise.buffer]);
      return { result, transfer: transfer as ArrayBuffer[] };
    }
  }
});
