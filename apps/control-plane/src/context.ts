// What route plugins and services receive: the store, the pool queues, the operator config and
// a few settings. Built once by buildApp from its deps; no module-level state.
import type { Redis } from 'ioredis';
import type { DatasetFacts, OperatorConfig } from '@anneal/protocol';
import type { PoolQueues, StoreContext } from '@anneal/store';
import type { MetricsSink } from '@anneal/telemetry';
import type { EventHub } from './infra/event-hub.ts';
import type { FileCache } from './infra/file-cache.ts';
import type { EnqueueRelay } from './jobs/outbox.ts';

export interface AppSettings {
  /** Request body limit in bytes (POST /v1/runs and other bodies). */
  bodyLimitBytes: number;
  /** A worker counts as online this long after its last heartbeat. */
  workerTtlSeconds: number;
  /** SSE keep-alive comment interval. */
  sseKeepAliveMs: number;
  /** How often running runs of workers with an expired heartbeat are moved to `retrying`. */
  lostWorkerSweepMs: number;
  /** A request (headers and body) not received in full this long after it began is answered
   * 408 and its connection closed (Node's requestTimeout; a body trickled a byte at a time). */
  requestTimeoutMs: number;
  /** How often Node checks open connections against requestTimeoutMs. */
  connectionsCheckMs: number;
  /** How often unfinished runs are checked for data a Redis failover lost (also at start-up
   * and after each reconnect; jobs/audit.ts). */
  lostDataAuditMs: number;
  /** Open SSE streams allowed per token, and per control plane (429 beyond). */
  sseMaxStreamsPerToken: number;
  sseMaxStreams: number;
  /** A live SSE stream with more unsent bytes than this is dropped (it resumes with
   * Last-Event-ID); replay waits for the client instead. */
  sseMaxBufferedBytes: number;
  /** A replaying SSE stream whose client reads nothing this long is dropped. */
  sseStallMs: number;
  /** Bytes of run files (eval items, rollouts) kept parsed between requests. */
  runFileCacheBytes: number;
}

export interface AppContext {
  store: StoreContext;
  queues: PoolQueues;
  operator: OperatorConfig;
  /** Registered datasets checked at start-up (which need an LLM judge). */
  datasetFacts: DatasetFacts;
  /** The workers' artifact root, absolute; a run's files are under runArtifactDir(it, id).
   * Read only: the control plane never writes there. */
  artifactDir: string;
  /** API keys of Tinker-compatible trainers by endpoint name (checkpoint export downloads). */
  trainerApiKeys: Readonly<Record<string, string>>;
  /** Parsed run files under artifactDir, while unchanged. */
  files: FileCache;
  settings: AppSettings;
  metrics: MetricsSink;
  /** Adds run jobs to BullMQ after the run is recorded (transactional outbox). */
  relay: EnqueueRelay;
  /** Live run events for every SSE stream of this control plane, over one Redis connection. */
  events: EventHub;
  /** A new connection for one blocking reader; the caller closes it. */
  createBlockingClient(): Redis;
}

export const DEFAULT_SETTINGS: AppSettings = {
  bodyLimitBytes: 1_048_576,
  workerTtlSeconds: 30,
  requestTimeoutMs: 30_000,
  connectionsCheckMs: 1_000,
  sseKeepAliveMs: 15_000,
  lostWorkerSweepMs: 5_000,
  lostDataAuditMs: 60_000,
  sseMaxStreamsPerToken: 32,
  sseMaxStreams: 4096,
  sseMaxBufferedBytes: 1_048_576,
  sseStallMs: 30_000,
  runFileCacheBytes: 64 * 1_048_576,
};
