// The engines and the control plane of the GRPO benchmarks, in a child process of the bench so
// that their work (generating and serialising tokens, the fake trainer's loss, the REST API) never
// runs on the worker's event loop: `replicas` fake vLLM servers (each `tokensPerSecond`, 0 =
// instant), a fake SkyRL trainer whose operations take `trainerLatencyMs` (forward and
// forward_backward `trainerTokenLatency`: per call plus per token; long-polled futures,
// as SkyRL answers them), and the real control plane on Redis. Prints one JSON line (the control
// plane's URL, its operator token, the operator config YAML the worker must use); samples its
// event-loop busy milliseconds (the engines' own work) every 20 ms and sends the series when asked
// (`{series: true}`); cleans its Redis keys and exits on SIGTERM or when the bench goes away.
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
import type { EngineShape, FleetStats, HostInfo } from './stack.ts';

const shape = JSON.parse(process.argv[2] ?? '{}') as EngineShape;
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `{anneal-bench-${randomUUID()}}`;
const token = `bench-${randomUUID()}`;
const dir = await mkdtemp(path.join(tmpdir(), 'anneal-bench-'));
const SERVED = 'qwen3-base';

const replicas = await Promise.all(
  Array.from({ length: shape.replicas }, () =>
    FakeVllmServer.start({
      servedModel: SERVED,
      maxModelLen: shape.maxModelLen,
      checkAdapterFiles: false, // the fake trainer writes no adapter files
      ...(shape.tokensPerSecond > 0 && { tokensPerSecond: shape.tokensPerSecond }),
      ...(shape.decodeTokensPerSecond && { decodeTokensPerSecond: shape.decodeTokensPerSecond }),
      ...(shape.batching && { batching: shape.batching }),
      ...(shape.maxLoras !== undefined && { maxLoras: shape.maxLoras }),
      ...(shape.maxCpuLoras !== undefined && { maxCpuLoras: shape.maxCpuLoras }),
      ...(shape.adapterReadMs !== undefined && { adapterReadMs: shape.adapterReadMs }),
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
].filter(Boolean);

const yaml = `
pools: { default: { slots: ${shape.slots ?? 1} } }
inference:
  vllm:
    type: vllm
    replicas: ${JSON.stringify(replicas.map((r) => r.url))}
    servedModel: ${SERVED}
    maxModelLen: ${shape.maxModelLen}
    maxInFlight: ${shape.maxInFlight ?? 64 * shape.replicas}${capacity.map((line) => `\n    ${line}`).join('')}
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
tenants: { bench: { maxConcurrentRuns: ${Math.max(4, shape.slots ?? 1)} } }
tokens:
  - { name: op, sha256: "${createHash('sha256').update(token).digest('hex')}", role: operator, tenant: bench }
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

const info: HostInfo = { controlUrl: plane.url, token, prefix, operatorYaml: yaml, dir };
process.stdout.write(`${JSON.stringify(info)}\n`);

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
    process.send?.({ fleet: fleetStats() });
    if (message.reset) resetFleet();
  }
});

// The replicas' adapters, batches and completions for bench/fleet-share: names listed per run
// (a name starts with its run id, `<runId>-…`) sampled every 20 ms; the rest counted exactly.
const runOf = (name: string) => name.split('-')[0] as string;
let peakPerRun: Record<string, number> = {};
const sampleNames = () => {
  for (const replica of replicas) {
    const counts: Record<string, number> = {};
    for (const name of replica.adapters.keys())
      counts[runOf(name)] = (counts[runOf(name)] ?? 0) + 1;
    for (const [run, count] of Object.entries(counts)) {
      peakPerRun[run] = Math.max(peakPerRun[run] ?? 0, count);
    }
  }
};
const namesSampler = setInterval(sampleNames, 20);
let base = { reads: 0, evictions: 0, stalledMs: 0, requests: 0 };
const totals = () => ({
  reads: sum(replicas.map((r) => r.lora.cache?.reads.length ?? 0)),
  evictions: sum(replicas.map((r) => r.lora.cache?.evicted.length ?? 0)),
  stalledMs: sum(replicas.map((r) => r.batch?.stalledMs ?? 0)),
  requests: replicas.map((r) => r.requests.length),
});
function sum(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}
let requestsSeen = replicas.map(() => 0);
function fleetStats(): FleetStats {
  sampleNames();
  const now = totals();
  return {
    peakListed: replicas.map((r) => r.lora.peakListed),
    listed: replicas.map((r) => [...r.adapters.keys()]),
    peakPerRun,
    served: replicas.flatMap((r) =>
      r.served.map((s): [string, number, number] => [
        runOf(s.requested),
        s.tokens,
        Math.round(performance.timeOrigin + s.atMs),
      ]),
    ),
    crossServed: sum(
      replicas.map((r) => r.served.filter((s) => s.requested !== s.servedBy).length),
    ),
    reads: now.reads - base.reads,
    evictions: now.evictions - base.evictions,
    stalledMs: now.stalledMs - base.stalledMs,
    failedUnloads: sum(
      replicas.map(
        (r, i) =>
          r.requests
            .slice(requestsSeen[i])
            .filter((q) => q.path === '/v1/unload_lora_adapter' && q.status === 500).length,
      ),
    ),
    peakBatch: Math.max(...replicas.map((r) => r.batch?.peakBatch ?? 0)),
  };
}
function resetFleet(): void {
  const now = totals();
  base = { ...now, requests: 0 };
  requestsSeen = now.requests;
  peakPerRun = {};
  for (const replica of replicas) {
    replica.served.splice(0);
    replica.lora.peakListed = replica.adapters.size;
    if (replica.batch) replica.batch.peakBatch = replica.batch.batch;
  }
}

let closing = false;
async function shutdown(): Promise<void> {
  if (closing) return;
  closing = true;
  clearInterval(sampler);
  clearInterval(namesSampler);
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
