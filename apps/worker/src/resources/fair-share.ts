// Fair share of a vLLM endpoint's in-flight capacity across the runs on it, whatever worker
// process each runs in (docs/operations.md "Fair share of an endpoint"). One `FleetShare` per
// endpoint and process: each run's requests wait in a local FIFO whose head asks Redis
// (@anneal/store acquireFairShare: weighted max-min fairness in one Lua script) for a lease of
// `n` sequences; a lease is given back when the request ends. Leases and waiters are renewed
// every third of their TTL while this process lives, so a dead worker's capacity comes back.
// One ask covers the first FAIR_SHARE_BATCH queued requests (as many as fit are granted), so a
// run refills the seats freed at once in one round trip. A queue that got nothing asks again
// after a release in this process, or every `pollMs` (a release in another process is seen
// within that).
import { randomUUID } from 'node:crypto';
import type { InferenceEngine, SampledSequence } from '@anneal/engines';
import {
  FAIR_SHARE_BATCH,
  FAIR_SHARE_TTL_MS,
  acquireFairShare,
  fairShareLeaseId,
  releaseFairShare,
  renewFairShare,
  type StoreContext,
} from '@anneal/store';

/** How often a waiting head asks again when nothing in this process was released: a release in
 * another process leaves capacity idle at most this long (requests take seconds). */
export const FAIR_SHARE_POLL_MS = 25;

export interface FairShareOptions {
  pollMs?: number;
  ttlMs?: number;
}

export interface FairShareLease {
  /** Seconds the request waited for its lease. */
  readonly waitedSeconds: number;
  /** Gives the lease back, counting the tokens the request was served. */
  release(tokens: number): Promise<void>;
}

interface Pending {
  units: number;
  enqueuedAt: number;
  signal: AbortSignal | undefined;
  resolve(lease: FairShareLease): void;
  reject(error: unknown): void;
}

class RunQueue {
  readonly waiterId = randomUUID();
  readonly queue: Pending[] = [];
  private pumping = false;

  constructor(
    private readonly share: FleetShare,
    readonly runId: string,
    readonly weight: number,
  ) {}

  acquire(units: number, signal?: AbortSignal): Promise<FairShareLease> {
    signal?.throwIfAborted();
    return new Promise((resolve, reject) => {
      const pending: Pending = { units, enqueuedAt: performance.now(), signal, resolve, reject };
      this.queue.push(pending);
      signal?.addEventListener(
        'abort',
        () => {
          const at = this.queue.indexOf(pending);
          if (at < 0) return;
          this.queue.splice(at, 1);
          reject(signal.reason);
        },
        { once: true },
      );
      void this.pump();
    });
  }

  /** Takes `pending` off the queue; false when it had left already (aborted). */
  private remove(pending: Pending): boolean {
    const at = this.queue.indexOf(pending);
    if (at < 0) return false;
    this.queue.splice(at, 1);
    return true;
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queue.length > 0) {
        const asked = this.queue.slice(0, FAIR_SHARE_BATCH);
        const leasePrefix = randomUUID();
        let granted: number;
        try {
          const answer = await acquireFairShare(this.share.ctx, this.share.endpoint, {
            capacity: this.share.capacity,
            runId: this.runId,
            weight: this.weight,
            waiterId: this.waiterId,
            units: asked.map((p) => p.units),
            queued: this.queue.reduce((sum, p) => sum + p.units, 0),
            leasePrefix,
            ttlMs: this.share.ttlMs,
          });
          granted = answer.granted;
        } catch (error) {
          const head = asked[0]!;
          this.remove(head);
          head.reject(error);
          continue;
        }
        for (const [i, pending] of asked.slice(0, granted).entries()) {
          const leaseId = fairShareLeaseId(leasePrefix, i + 1);
          const lease = this.share.hold(this.runId, leaseId, pending.enqueuedAt);
          // One aborted while it was being granted gives its lease straight back (if Redis
          // cannot be reached, the lease expires within the TTL: nothing renews it).
          if (this.remove(pending)) pending.resolve(lease);
          else await lease.release(0).catch(() => undefined);
        }
        if (granted === 0) await this.share.released(this.share.pollMs);
      }
      // Withdraw the waiter; if Redis cannot be reached it expires within the TTL anyway.
      await releaseFairShare(this.share.ctx, this.share.endpoint, {
        runId: this.runId,
        waiterId: this.waiterId,
      }).catch(() => undefined);
    } finally {
      this.pumping = false;
    }
    if (this.queue.length > 0) void this.pump();
    else this.share.forget(this);
  }
}

export class FleetShare {
  readonly pollMs: number;
  readonly ttlMs: number;
  private readonly runs = new Map<string, RunQueue>();
  private readonly held = new Set<string>();
  private wakers: Array<() => void> = [];
  private readonly renewal: NodeJS.Timeout;

  constructor(
    readonly ctx: StoreContext,
    readonly endpoint: string,
    /** Sequences in flight on the endpoint (vLLM --max-num-seqs × replicas). */
    readonly capacity: number,
    options: FairShareOptions = {},
  ) {
    this.pollMs = options.pollMs ?? FAIR_SHARE_POLL_MS;
    this.ttlMs = options.ttlMs ?? FAIR_SHARE_TTL_MS;
    this.renewal = setInterval(() => void this.renew().catch(() => {}), this.ttlMs / 3);
    this.renewal.unref();
  }

  /** Waits for a lease of `units` sequences for `runId` (weight: the run's share weight, fixed
   * for the run's life). A request larger than the capacity asks for all of it. */
  acquire(runId: string, weight: number, units: number, signal?: AbortSignal) {
    let queue = this.runs.get(runId);
    if (queue === undefined) {
      queue = new RunQueue(this, runId, weight);
      this.runs.set(runId, queue);
    }
    return queue.acquire(Math.min(units, this.capacity), signal);
  }

  /** Forgets a run's queue once it is empty (the next request of the run starts a new one). */
  forget(queue: RunQueue): void {
    if (this.runs.get(queue.runId) === queue && queue.queue.length === 0) {
      this.runs.delete(queue.runId);
    }
  }

  /** A granted lease: renewed until released. */
  hold(runId: string, leaseId: string, enqueuedAt: number): FairShareLease {
    this.held.add(leaseId);
    const waitedMs = performance.now() - enqueuedAt;
    let done: Promise<void> | undefined;
    return {
      waitedSeconds: waitedMs / 1000,
      release: (tokens) => {
        done ??= (async () => {
          this.held.delete(leaseId);
          try {
            await releaseFairShare(this.ctx, this.endpoint, { runId, leaseId, tokens, waitedMs });
          } finally {
            this.wake();
          }
        })();
        return done;
      },
    };
  }

  /** Resolves at the next release in this process, or after `ms`. */
  released(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wakers = this.wakers.filter((w) => w !== wake);
        resolve();
      }, ms);
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      this.wakers.push(wake);
    });
  }

  private wake(): void {
    const wakers = this.wakers;
    this.wakers = [];
    for (const w of wakers) w();
  }

  async renew(): Promise<void> {
    const waiters = [...this.runs.values()]
      .filter((r) => r.queue.length > 0)
      .map((r) => r.waiterId);
    await renewFairShare(this.ctx, this.endpoint, [...this.held, ...waiters], this.ttlMs);
  }

  /** Stops renewing (the leases of requests still in flight then expire with their TTL). */
  async close(): Promise<void> {
    clearInterval(this.renewal);
    this.wake();
  }
}

/** What a run was served through its share, for the run's metrics. */
export interface FleetServed {
  runId: string;
  endpoint: string;
  /** Sequences (the request's `n`). */
  sequences: number;
  /** Tokens generated over its sequences. */
  tokens: number;
  waitedSeconds: number;
}

/** The run's view of a shared inference engine with every `sample` inside a lease of its
 * share, and its request `priority` (used by engines that declare priority scheduling). */
export function fairShareInference(
  inner: InferenceEngine,
  share: FleetShare,
  run: { id: string; weight: number; priority: number },
  onServed: (served: FleetServed) => void,
): InferenceEngine {
  return {
    loadWeights: (weights) => inner.loadWeights(weights),
    ...(inner.releaseWeights && { releaseWeights: (name: string) => inner.releaseWeights!(name) }),
    close: () => inner.close(),
    sample: async (request, signal) => {
      const lease = await share.acquire(run.id, run.weight, request.n, signal);
      let sequences: SampledSequence[];
      try {
        sequences = await inner.sample({ ...request, priority: run.priority }, signal);
      } catch (error) {
        // The sample's error is the one to report; a lease Redis did not take back expires.
        await lease.release(0).catch(() => undefined);
        throw error;
      }
      const tokens = sequences.reduce((sum, s) => sum + s.tokens.length, 0);
      await lease.release(tokens);
      onServed({
        runId: run.id,
        endpoint: share.endpoint,
        sequences: request.n,
        tokens,
        waitedSeconds: lease.waitedSeconds,
      });
      return sequences;
    },
  };
}

/** The run's view of an engine with its request `priority` on every sample (an endpoint with
 * priority scheduling but no declared capacity). */
export function prioritizedInference(inner: InferenceEngine, priority: number): InferenceEngine {
  return {
    loadWeights: (weights) => inner.loadWeights(weights),
    ...(inner.releaseWeights && { releaseWeights: (name: string) => inner.releaseWeights!(name) }),
    close: () => inner.close(),
    sample: (request, signal) => inner.sample({ ...request, priority }, signal),
  };
}

/** vLLM's priority of a run's requests: lower runs first, so Anneal's priority (0 lowest, 100
 * highest) is turned around; 0 for the default priority 50 keeps requests without one equal. */
export function vllmPriorityOf(runPriority: number): number {
  return 50 - runPriority;
}
