// The production path of a GRPO run for the benchmarks: the real worker (startWorker: BullMQ,
// the resource resolver, the engine clients, the GRPO executor, step commits to Redis) in this
// process, and everything it talks to in a child (engine-host.ts): fake vLLM replicas and a fake
// SkyRL trainer over real HTTP, and the control plane that takes the run over REST. This process
// is then the orchestrator alone, so its event-loop busy time is the orchestrator's work.
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import type { TokenLatency } from '@anneal/engines/testing';
import { parseOperatorConfig } from '@anneal/protocol';
import { keys } from '@anneal/store';
import { createLogger } from '@anneal/telemetry';
import { defineWorkerConfig, startWorker, type WorkerHandle } from '@anneal/worker';
import { threadCpu, type ThreadCpu } from './thread-cpu.ts';

/** The simulated engines (engine-host.ts). */
export interface EngineShape {
  /** Fake vLLM servers behind the inference endpoint. */
  replicas: number;
  /** The replicas sample prose as Qwen3 encodes it (model-text.ts) instead of arithmetic ids. */
  modelText?: boolean;
  /** Generation throughput of each replica, its completions queued; 0 = instant. */
  tokensPerSecond: number;
  /** Or: each sequence's decode speed under continuous batching (FakeVllmServer
   * `decodeTokensPerSecond`: concurrent completions overlap). */
  decodeTokensPerSecond?: number;
  /** Compute time of each trainer operation (absent = instant). */
  trainerLatencyMs: Partial<
    Record<
      | 'forward'
      | 'forward_backward'
      | 'optim_step'
      | 'save_weights'
      | 'load_weights'
      | 'save_weights_for_sampler',
      number
    >
  >;
  /** forward / forward_backward in proportion to their tokens plus a fixed cost per call
   * (FakeTinkerServer `tokenLatency`); replaces `trainerLatencyMs` for those two. */
  trainerTokenLatency?: TokenLatency;
  /** vLLM's max_model_len (prompt + response). */
  maxModelLen: number;
  /** Or: continuous batching with a step time growing with the batch (FakeVllmServer
   * `batching`; replaces both rates above). */
  batching?: { stepBaseMs: number; stepPerSequenceMs: number };
  /** The replicas' `--max-loras` / `--max-cpu-loras` (the fake's LoRA cache), declared to the
   * control plane as the endpoint's `maxLoras` / `maxCpuLoras`, and its `oversubscribe`. */
  maxLoras?: number;
  maxCpuLoras?: number;
  oversubscribe?: boolean;
  /** ms each adapter read from disk takes on a replica (FakeVllmServer `adapterReadMs`). */
  adapterReadMs?: number;
  /** The trainer's models share one compute queue (FakeTinkerServer `sharedCompute`). */
  sharedTrainer?: boolean;
  /** The worker pool's slots (runs the worker takes at once; default 1). */
  slots?: number;
  /** The endpoint's `maxInFlight` (requests in flight from the worker; default 64 a replica). */
  maxInFlight?: number;
  /** The endpoint's `readerThreads` (completion replies read off the event loop; default 0). */
  readerThreads?: number;
  /** The worker's `heapGrowingPercent` (V8's heap growing factor; default the worker's). */
  heapGrowingPercent?: number;
  /** The replicas' `--max-num-seqs` (FakeVllmServer `maxNumSeqs`), declared as the endpoint's
   * `maxNumSeqs`: runs share it by their tenants' weights (docs/operations.md "Fair share of an
   * endpoint"). */
  maxNumSeqs?: number;
  /** One tenant per weight (`t0`, `t1`, …, each with an operator token); default one tenant of
   * weight 1. `Stack.run`'s `tenant` picks the index. */
  tenantWeights?: number[];
}

/** What the engine host saw of the fake vLLM replicas since the last reset (engine-host.ts). */
export interface FleetStats {
  /** Per replica: most adapter names listed at once (exact), and now. */
  peakListed: number[];
  listed: string[][];
  /** Most names listed at once for one run (the name's run-id prefix), sampled every 20 ms. */
  peakPerRun: Record<string, number>;
  /** Completions answered: [run-id prefix of the adapter asked for (a shared reference: its
   * reference id), tokens, epoch ms answered,
   * epoch ms the request arrived]. */
  served: Array<[string, number, number, number]>;
  /** Completions served by another adapter than the one asked for. */
  crossServed: number;
  /** Adapter reads from disk (loads and re-reads), evictions by the CPU LRU, ms the batch
   * stood still for reads, and unloads answered 500 (an evicted adapter on vLLM main). */
  reads: number;
  evictions: number;
  stalledMs: number;
  failedUnloads: number;
  /** Most sequences in one replica's batch. */
  peakBatch: number;
}

/** engine-host.ts's first stdout line. */
export interface HostInfo {
  controlUrl: string;
  /** An operator token per tenant (`EngineShape.tenantWeights`), in order. */
  tokens: string[];
  prefix: string;
  operatorYaml: string;
  dir: string;
}

export interface StepTrace {
  step: number;
  /** performance.now() when the step record was committed. */
  atMs: number;
  /** This process's event-loop busy ms (performance.eventLoopUtilization().active) by then. */
  busyMs: number;
  /** This process's CPU ms (process.cpuUsage, user + system, all threads) by then. */
  cpuMs: number;
  /** The same CPU time split between the main thread and the others (thread-cpu.ts; Linux). */
  threads: ThreadCpu | undefined;
  metrics: Readonly<Record<string, number | null>>;
}

export interface RunTrace {
  runId: string;
  steps: StepTrace[];
  /** The run's outcome summary as the worker stored it (e.g. referenceCacheHits). */
  summary: Readonly<Record<string, unknown>>;
}

export interface Stack {
  /** Submits a run spec (YAML) through the REST API, as the operator of tenant `tenant` (an
   * index into `EngineShape.tenantWeights`, default 0), and waits until the worker is done. */
  run(spec: string, onStep?: (step: StepTrace) => void, tenant?: number): Promise<RunTrace>;
  /** The engine host's view of the replicas since the last call (`reset`: start afresh). */
  fleet(reset?: boolean): Promise<FleetStats>;
  /** GET on the control plane's API as the operator (of tenant `tenant`, default 0). */
  get(url: string, tenant?: number): Promise<Record<string, unknown>>;
  /** The engine host's event-loop busy ms at each of these performance.now() times. */
  hostBusyAt(times: readonly number[]): Promise<number[]>;
  /** The worker's artifact root (its runs' checkpoints and rollout ledgers). */
  artifactDir: string;
  close(): Promise<void>;
}

const silent = createLogger({ name: 'bench', level: 'silent' });
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

function startHost(shape: EngineShape): Promise<{ info: HostInfo; child: ChildProcess }> {
  const script = fileURLToPath(new URL('./engine-host.ts', import.meta.url));
  const child = spawn(
    process.execPath,
    ['--conditions=@anneal/source', '--import', 'tsx', script, JSON.stringify(shape)],
    { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], env: process.env },
  );
  return new Promise((resolve, reject) => {
    let buffer = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const newline = buffer.indexOf('\n');
      if (newline >= 0) resolve({ info: JSON.parse(buffer.slice(0, newline)) as HostInfo, child });
    });
    child.on('close', (code) => reject(new Error(`bench engine host exited with ${code}`)));
  });
}

/** The child's busy-time samples, [performance.timeOrigin-relative ms in this process, busy ms]. */
function busySeries(child: ChildProcess): Promise<Array<[number, number]>> {
  return new Promise((resolve) => {
    child.once('message', (m: { series: Array<[number, number]> }) => {
      // The child sampled Date.now(); convert to this process's performance.now().
      const offset = performance.timeOrigin;
      resolve(m.series.map(([at, busy]) => [at - offset, busy]));
    });
    child.send({ series: true });
  });
}

/** Linear interpolation of a sampled, increasing series at `t`. */
function interpolate(series: ReadonlyArray<[number, number]>, t: number): number {
  let prev = series[0];
  if (!prev) throw new Error('engine host sent no busy-time samples');
  for (const point of series) {
    if (point[0] >= t) {
      const span = point[0] - prev[0];
      return span <= 0 ? point[1] : prev[1] + ((point[1] - prev[1]) * (t - prev[0])) / span;
    }
    prev = point;
  }
  return prev[1];
}

export async function startStack(shape: EngineShape): Promise<Stack> {
  const { info, child } = await startHost(shape);
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const parsed = parseOperatorConfig(info.operatorYaml);
  const artifactDir = path.join(info.dir, 'worker');
  if (!parsed.ok) throw new Error(`bench operator config: ${JSON.stringify(parsed.errors)}`);
  const worker: WorkerHandle = await startWorker(
    defineWorkerConfig({
      redisUrl,
      keyPrefix: info.prefix,
      pool: 'default',
      workerId: `bench-${process.pid}`,
      operatorConfig: parsed.value,
      artifactDir,
      metrics: { port: 0, host: '127.0.0.1' },
      ...(shape.heapGrowingPercent !== undefined && {
        heapGrowingPercent: shape.heapGrowingPercent,
      }),
    }),
    { logger: silent },
  );
  const redis = new Redis(redisUrl);
  const api = async (method: string, url: string, body?: string, tenant = 0) => {
    const token = info.tokens[tenant];
    if (token === undefined) throw new Error(`bench: no tenant ${tenant}`);
    const res = await fetch(`${info.controlUrl}${url}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined && { 'content-type': 'application/yaml' }),
      },
      ...(body !== undefined && { body }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  return {
    artifactDir,
    async run(spec, onStep, tenant = 0) {
      const steps: StepTrace[] = [];
      let runId: string | undefined;
      let ended: (reason: string) => void = () => undefined;
      const done = new Promise<string>((resolve) => (ended = resolve));
      const offStep = worker.events.on('step:committed', (event) => {
        if (event.runId !== runId) return;
        const cpu = process.cpuUsage();
        const trace: StepTrace = {
          step: event.step,
          atMs: performance.now(),
          busyMs: performance.eventLoopUtilization().active,
          cpuMs: (cpu.user + cpu.system) / 1000,
          threads: threadCpu(),
          metrics: event.metrics,
        };
        steps.push(trace);
        onStep?.(trace);
      });
      const offEnd = worker.events.on('run:ended', (event) => {
        if (event.runId === runId) ended(event.reason);
      });
      try {
        const submitted = await api('POST', '/v1/runs', spec, tenant);
        if (submitted.status !== 201) {
          throw new Error(`run not accepted: ${JSON.stringify(submitted.body)}`);
        }
        runId = submitted.body['id'] as string;
        const reason = await done;
        if (reason !== 'succeeded') {
          const run = await api('GET', `/v1/runs/${runId}`, undefined, tenant);
          throw new Error(`bench run ${reason}: ${JSON.stringify(run.body['error'] ?? run.body)}`);
        }
        const stored = await redis.hget(keys(info.prefix).run(runId), 'summary');
        const summary = JSON.parse(stored ?? '{}') as Record<string, unknown>;
        return { runId, steps, summary };
      } finally {
        offStep();
        offEnd();
      }
    },
    fleet(reset = false) {
      return new Promise((resolve) => {
        child.once('message', (m: { fleet: FleetStats }) => resolve(m.fleet));
        child.send({ fleet: true, reset });
      });
    },
    async get(url, tenant = 0) {
      const reply = await api('GET', url, undefined, tenant);
      if (reply.status !== 200) throw new Error(`GET ${url}: ${JSON.stringify(reply.body)}`);
      return reply.body;
    },
    async hostBusyAt(times) {
      const series = await busySeries(child);
      return times.map((t) => interpolate(series, t));
    },
    async close() {
      await worker.close();
      await redis.quit();
      child.kill('SIGTERM');
      await exited;
    },
  };
}
