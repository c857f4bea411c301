// Sampler worker thread: holds one onnxruntime session per loaded weights name and generates
// for one request at a time (the main thread never sends a second sample while one runs).
import { workerData } from 'node:worker_threads';
import { InferenceSession } from 'onnxruntime-node';
import type { GenerateRequest } from './generate.ts';
import { generate } from './generate.ts';
import type { ModelConfig } from './params.ts';
import { serveRpc } from './worker-rpc.ts';

export interface SamplerWorkerData {
  /** Int32Array flag per worker: set to 1 by the main thread to abort the running request. */
  abortFlag: SharedArrayBuffer;
  intraOpNumThreads: number;
}

export type SamplerMessage =
  | { type: 'load'; name: string; decoderPath: string; config: ModelConfig }
  | { type: 'unload'; name: string }
  | { type: 'sample'; name: string; request: GenerateRequest };

const data = (workerData as { data: SamplerWorkerData }).data;
const abortFlag = new Int32Array(data.abortFlag);
interface Entry {
  session: InferenceSession;
  config: ModelConfig;
  /** Requests generating with this session; a replaced session is released when it drops to 0. */
  users: number;
  retired: boolean;
}
const sessions = new Map<string, Entry>();

async function retire(entry: Entry | undefined): Promise<void> {
  if (!entry) return;
  entry.retired = true;
  if (entry.users === 0) await entry.session.release();
}

serveRpc(async (payload) => {
  const message = payload as SamplerMessage;
  switch (message.type) {
    case 'load': {
      const session = await InferenceSession.create(message.decoderPath, {
        intraOpNumThreads: data.intraOpNumThreads,
        interOpNumThreads: 1,
        graphOptimizationLevel: 'all',
      });
      const previous = sessions.get(message.name);
      sessions.set(message.name, { session, config: message.config, users: 0, retired: false });
      await retire(previous);
      return { result: null };
    }
    case 'unload': {
      const entry = sessions.get(message.name);
      sessions.delete(message.name);
      await retire(entry);
      return { result: null };
    }
    case 'sample': {
      const entry = sessions.get(message.name);
      if (!entry) throw new Error(`no weights loaded under the name ${message.name}`);
      entry.users++;
      try {
        const aborted = () => Atomics.load(abortFlag, 0) === 1;
        return { result: await generate(entry.session, entry.config, message.request, aborted) };
      } finally {
        entry.users--;
        if (entry.retired && entry.users === 0) await entry.session.release();
      }
    }
  }
});
