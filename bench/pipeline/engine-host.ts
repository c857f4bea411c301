// The engines and the control plane of the GRPO benchmarks, in a child process of the bench so
// that their work (generating and serialising tokens, the fake trainer's loss, the REST API) never
// runs on the worker's event loop: `replicas` fake vLLM servers (each `tokensPerSecond`, 0 =
// instant), a fake SkyRL trainer whose operations take `trainerLatencyMs` (forward and
// forward_backward `trainerTokenLatency`: per call plus per token; long-polled futures,
// as SkyRL answers them), and the real control plane on Redis. Prints one JSON line (the control
// plane's URL, its operator token, the operator config YAML the worker must use); samples its
// event-loop busy milliseconds (the engines' own work) every 20 ms and sends the series when asked
// (`{series: true}`), and what the replicas saw of adapters and batches (fleet-stats.ts) when asked
// (`{fleet: true, reset}`); the endpoint's adapter capacity, the replicas' batching and read cost,
// a shared trainer, the pool's slots, `--max-num-seqs` and the tenants' weights (one tenant and
// operator token per weight) come from the shape (stack.ts `EngineShape`); cleans its
// Redis keys and exits on SIGTERM or when the bench goes away.
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { parseEnv, startControlPlane } from '@anneal/control-plane';
import {
  FakeTinkerServer,
  FakeVllmServer,
  QWEN3_TOKENIZER_CONFIG,
  QWEN3_TOKENIZER_JSON,
} from '@anneal/engines/testing';
import { parseOperatorConfig } from '@anneal/protocol';
import { deleteKeysWithPrefix } from '@anneal/store';
import { createLogger } from '@anneal/telemetry';
import { watchFleet } from './fleet-stats.ts';
import { modelTextIds } from './model-text.ts';
import type { EngineShape, HostInfo } from './stack.ts';

const shape = JSON.parse(process.argv[2] ?? '{}') as EngineShape;
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `{anneal-bench-${randomUUID()}}`;
const weights = shape.tenantWeights ?? [1];
const tokens = weights.map(() => `bench-${randomUUID()}`);
const dir = await mkdtemp(path.join(tmpdir(), 'anneal-bench-'));
const SERVED = 'qwen3-base';
const sampleFrom = shape.modelText ? modelTextIds() : undefined;

const replicas = await Promise.all(
  Array.from({ length: shape.replicas }, () =>
    FakeVllmServer.start({
      servedModel: SERVED,
      maxModelLen: shape.maxModelLen,
      checkAdapterFiles: false, // the fake trainer writes no adapter files
      ...(sampleFrom && { sampleFrom }),
      ...(shape.tokensPerSecond > 0 && { tokensPerSecond: shape.tokensPerSecond }),
      ...(shape.decodeTokensPerSecond && { decodeTokensPerSecond: shape.decodeTokensPerSecond }),
      ...(shape.batching && { batching: shape.batching }),
      ...(shape.maxLoras !== undefined && { maxLoras: shape.maxLoras }),
      ...(shape.maxCpuLoras !== undefined && { maxCpuLoras: shape.maxCpuLoras }),
      ...(shape.adapterReadMs !== undefined && { adapterReadMs: shape.adapterReadMs }),
      ...(shape.maxNumSeqs !== undefined && { maxNumSeqs: shape.maxNumSeqs }),
    }),
  ),
);
const trainer = await FakeTinkerServer.start({
  flavor: 'skyrl',
  pendingPolls: 0,
  latencyMs: shape.trainerLatencyMs,
  ...(shape.trainerTokenLatency && { tokenLatency: shape.trainerTokenLatency }),
  ...(shape.sharedTrainer && { sharedCompute: true }),
});
const capacity = [
  shape.maxLoras !== undefined && `maxLoras: ${shape.maxLoras}`,
  shape.maxCpuLoras !== undefined && `maxCpuLoras: ${shape.maxCpuLoras}`,
  shape.oversubscribe && 'oversubscribe: true',
  shape.maxNumSeqs !== undefined && `maxNumSeqs: ${shape.maxNumSeqs}`,
].filter(Boolean);

const yaml = `
pools: { default: { slots: ${shape.slots ?? 1} } }
inference:
  vllm:
    type: vllm
    replicas: ${JSON.stringify(replicas.map((r) => r.url))}
    servedModel: ${SERVED}
    maxModelLen: ${shape.maxModelLen}
    maxInFlight: ${shape.maxInFlight ?? 64 * shape.replicas}
    readerThreads: ${shape.readerThreads ?? 0}${capacity.map((line) => `\n    ${line}`).join('')}
    adapters: { root: ${JSON.stringify(path.join(dir, 'adapters'))} }
trainers:
  skyrl:
    type: tinker
    url: ${trainer.url}
    backend: skyrl-jax
    capabilities: { kinds: [grpo], losses: [importance_sampling], reduction: mean_per_sequence }
search: { local: { type: local } }
baseModels:
  qwen3:
    model: ${SERVED}
    tokenizer: { type: hf, path: ${JSON.stringify(QWEN3_TOKENIZER_JSON)}, eosToken: "<|endoftext|>" }
    chatFormat: { type: template, path: ${JSON.stringify(QWEN3_TOKENIZER_CONFIG)} }
defaults: { pool: default, inference: vllm, trainer: skyrl, search: local, baseModel: qwen3 }
tenants:${weights.map((w, i) => `\n  t${i}: { maxConcurrentRuns: ${Math.max(4, shape.slots ?? 1)}, weight: ${w} }`).join('')}
tokens:${tokens.map((t, i) => `\n  - { name: op${i}, sha256: "${createHash('sha256').update(t).digest('hex')}", role: operator, tenant: t${i} }`).join('')}
`;
const parsed = parseOperatorConfig(yaml);
if (!parsed.ok) throw new Error(`bench operator config: ${JSON.stringify(parsed.errors)}`);
const plane = await startControlPlane({
  env: parseEnv({
    REDIS_URL: redisUrl,
    ANNEAL_KEY_PREFIX: prefix,
    ANNEAL_HOST: '127.0.0.1',
    ANNEAL_PORT: '0',
  }),
  operator: { operator: parsed.value },
  logger: createLogger({ name: 'bench', level: 'silent' }),
});

const info: HostInfo = { controlUrl: plane.url, tokens, prefix, operatorYaml: yaml, dir };
process.stdout.write(`${JSON.stringify(info)}\n`);

const fleet = watchFleet(replicas);
const series: Array<[number, number]> = [];
const sample = () => series.push([Date.now(), performance.eventLoopUtilization().active]);
sample();
const sampler = setInterval(sample, 20);
process.on('message', (message: { series?: boolean; fleet?: boolean; reset?: boolean }) => {
  if (message.series) {
    sample();
    process.send?.({ series });
  }
  if (message.fleet) {
    process.send?.({ fleet: fleet.stats() });
    if (message.reset) fleet.reset();
  }
});

let closing = false;
async function shutdown(): Promise<void> {
  if (closing) return;
  closing = true;
  clearInterval(sampler);
  fleet.close();
  await plane.close();
  await Promise.all([...replicas.map((r) => r.close()), trainer.close()]);
  const redis = new Redis(redisUrl);
  await deleteKeysWithPrefix(redis, prefix);
  await redis.quit();
  await rm(dir, { recursive: true, force: true });
  process.exit(0);
}
// SIGTERM from the bench, or the IPC channel closing because the bench died.
process.once('SIGTERM', () => void shutdown());
process.once('disconnect', () => void shutdown());
