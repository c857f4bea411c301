// A minimal worker for scheduling tests: consumes a pool queue and follows the store's worker
// contract (startRun, steps, checkpoints, cancel at step boundaries, finishRun). No engines.
import { DelayedError, type Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { poolQueueName } from '@anneal/protocol';
import {
  appendStep,
  bullPrefix,
  createStoreContext,
  finishRun,
  getCheckpoint,
  getRun,
  heartbeatWorker,
  isCancelRequested,
  removeWorker,
  setCheckpoint,
  startRun,
  subscribeControl,
  type StoreContext,
} from '@anneal/store';
import { REDIS_URL } from './helpers.ts';

export interface TestWorkerOptions {
  prefix: string;
  pool?: string;
  id?: string;
  concurrency?: number;
  /** Pause before committing this step until `release(runId)`. */
  holdAtStep?: number;
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

export class TestWorker {
  readonly id: string;
  readonly started: string[] = [];
  private readonly ctx: StoreContext;
  private readonly connections: Redis[] = [];
  private readonly cancelled = new Set<string>();
  private readonly holds = new Map<string, Deferred>();
  private readonly held = new Set<string>();
  private worker: Worker | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly running = new Set<string>();
  /** Set by close(): a run that reaches `holdAtStep` afterwards does not pause (nothing would release it). */
  private closing = false;

  constructor(private readonly options: TestWorkerOptions) {
    this.id = options.id ?? 'test-worker';
    this.ctx = createStoreContext(this.connect(), options.prefix);
  }

  private connect(): Redis {
    const client = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    this.connections.push(client);
    return client;
  }

  private get pool(): string {
    return this.options.pool ?? 'default';
  }

  async beat(): Promise<void> {
    await heartbeatWorker(this.ctx, {
      id: this.id,
      pool: this.pool,
      slots: this.options.concurrency ?? 1,
      busy: this.running.size,
      runs: [...this.running],
      startedAt: new Date().toISOString(),
    });
  }

  async start(): Promise<this> {
    await subscribeControl(this.connect(), this.options.prefix, (message) => {
      if (message.type === 'cancel') this.cancelled.add(message.runId);
    });
    await this.beat();
    this.heartbeat = setInterval(() => void this.beat().catch(() => {}), 1000);
    this.worker = new Worker(poolQueueName(this.pool), (job, token) => this.process(job, token), {
      connection: this.connect(),
      prefix: bullPrefix(this.options.prefix),
      concurrency: this.options.concurrency ?? 1,
    });
    return this;
  }

  /** True once the worker is paused before `holdAtStep` of `runId`. */
  isHeld(runId: string): boolean {
    return this.held.has(runId);
  }

  release(runId: string): void {
    this.holds.get(runId)?.resolve();
  }

  private async process(job: Job, token?: string): Promise<void> {
    const runId = (job.data as { runId: string }).runId;
    const start = await startRun(this.ctx, runId, this.id);
    if (start.status === 'blocked') {
      await job.moveToDelayed(Date.now() + 100, token);
      throw new DelayedError();
    }
    if (start.status === 'not-startable') return;
    this.started.push(runId);
    this.running.add(runId);
    try {
      await this.execute(runId);
    } finally {
      this.running.delete(runId);
    }
  }

  private async execute(runId: string): Promise<void> {
    const run = await getRun(this.ctx, runId);
    const steps = Number((run?.spec as { steps?: number }).steps ?? 1);
    const from = ((await getCheckpoint(this.ctx, runId))?.step ?? 0) + 1;
    for (let step = from; step <= steps; step++) {
      if (step === this.options.holdAtStep && !this.closing) {
        const hold = deferred();
        this.holds.set(runId, hold);
        this.held.add(runId);
        await hold.promise;
        this.held.delete(runId);
      }
      if (this.cancelled.has(runId) || (await isCancelRequested(this.ctx, runId))) {
        await setCheckpoint(this.ctx, runId, {
          step: step - 1,
          path: `mem://${runId}/${step - 1}`,
        });
        await finishRun(
          this.ctx,
          runId,
          { state: 'cancelled', reason: 'cancel requested' },
          this.id,
        );
        return;
      }
      await appendStep(this.ctx, runId, step, { loss: 1 / step, grad_norm: null });
      await setCheckpoint(this.ctx, runId, { step, path: `mem://${runId}/${step}` });
    }
    await finishRun(this.ctx, runId, { state: 'succeeded', reason: 'all steps done' }, this.id);
  }

  /** As a killed process: no more heartbeats (its record then expires; see expireHeartbeat). */
  stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  async close(): Promise<void> {
    this.closing = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const hold of this.holds.values()) hold.resolve();
    await this.worker?.close();
    await removeWorker(this.ctx, this.id).catch(() => {});
    await Promise.all(this.connections.map((c) => c.quit().catch(() => c.disconnect())));
  }
}
