// Reward-model worker thread: one onnxruntime session of a value-head model, scoring padded
// batches. Input contract (README "Reward model"): input_ids int64 [batch, seq] right-padded,
// plus either lengths int64 [batch] or attention_mask int64 [batch, seq] (1 = real token);
// output `score` (or the only output) float [batch] or [batch, 1].
import { workerData } from 'node:worker_threads';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { serveRpc } from '../embedded/worker-rpc.ts';

export interface ScorerWorkerData {
  modelPath: string;
  executionProvider: 'cpu' | 'cuda';
  intraOpNumThreads: number;
}

export type ScorerMessage =
  { type: 'describe' } | { type: 'score'; rows: number[][]; padTokenId: number };

export interface ModelDescription {
  inputs: string[];
  outputs: string[];
  lengthInput: 'lengths' | 'attention_mask';
  scoreOutput: string;
}

const data = (workerData as { data: ScorerWorkerData }).data;

async function open(): Promise<{ session: InferenceSession; description: ModelDescription }> {
  let session: InferenceSession;
  try {
    session = await InferenceSession.create(data.modelPath, {
      executionProviders: data.executionProvider === 'cuda' ? ['cuda'] : ['cpu'],
      intraOpNumThreads: data.intraOpNumThreads,
      graphOptimizationLevel: 'all',
    });
  } catch (err) {
    const hint =
      data.executionProvider === 'cuda'
        ? ' (is the CUDA build of onnxruntime-node installed with its CUDA libraries?)'
        : '';
    throw new Error(
      `cannot load reward model ${data.modelPath} on ${data.executionProvider}${hint}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  const inputs = [...session.inputNames];
  const outputs = [...session.outputNames];
  const lengthInput = inputs.includes('lengths')
    ? 'lengths'
    : inputs.includes('attention_mask')
      ? 'attention_mask'
      : null;
  const extra = inputs.filter((n) => n !== 'input_ids' && n !== lengthInput);
  if (!inputs.includes('input_ids') || !lengthInput || extra.length > 0) {
    throw new Error(
      `reward model ${data.modelPath} has inputs [${inputs.join(', ')}]; expected input_ids plus lengths or attention_mask`,
    );
  }
  const scoreOutput = outputs.includes('score')
    ? 'score'
    : outputs.length === 1
      ? outputs[0]!
      : null;
  if (!scoreOutput)
    throw new Error(
      `reward model ${data.modelPath} has outputs [${outputs.join(', ')}]; expected score`,
    );
  return { session, description: { inputs, outputs, lengthInput, scoreOutput } };
}

const ready = open();
ready.catch(() => undefined); // reported on the first request

serveRpc(async (payload) => {
  const message = payload as ScorerMessage;
  const { session, description } = await ready;
  if (message.type === 'describe') return { result: description };
  const batch = message.rows.length;
  const width = Math.max(...message.rows.map((r) => r.length));
  const ids = new BigInt64Array(batch * width).fill(BigInt(message.padTokenId));
  const mask = new BigInt64Array(batch * width);
  message.rows.forEach((row, b) => {
    row.forEach((id, t) => {
      ids[b * width + t] = BigInt(id);
      mask[b * width + t] = 1n;
    });
  });
  const feeds: Record<string, Tensor> = { input_ids: new Tensor('int64', ids, [batch, width]) };
  feeds[description.lengthInput] =
    description.lengthInput === 'lengths'
      ? new Tensor(
          'int64',
          BigInt64Array.from(message.rows, (r) => BigInt(r.length)),
          [batch],
        )
      : new Tensor('int64', mask, [batch, width]);
  const out = (await session.run(feeds))[description.scoreOutput]!;
  if (out.size !== batch)
    throw new Error(
      `reward model returned ${out.size} scores for ${batch} rows (dims ${out.dims.join('x')})`,
    );
  const scores = Float32Array.from(out.data as Float32Array);
  return { result: scores, transfer: [scores.buffer] };
});
