// One Redis subscription per control plane for every live SSE stream: a single blocking
// connection XREADs the event streams of all watched runs at once and fans events out in
// process. Before, each stream held a Redis connection of its own, so one token could exhaust
// Redis' client limit (and take workers and other control planes down with it).
//
// A subscriber has caught up with XRANGE and joins with the id it has seen; the hub reads each
// run from the oldest id its subscribers have seen and hands every subscriber only the events
// after its own id, so joining never loses or repeats an event. A change to the set of watched
// runs interrupts the blocked read (CLIENT UNBLOCK) so new runs are followed at once. With
// acknowledged writes on (`replicated`), a batch is handed out only once a replica holds it.
import type { Redis } from 'ioredis';
import type { StoredRunEvent } from '@anneal/protocol';
import { compareEventIds, readEventsOf } from '@anneal/store';

export interface EventSubscriber {
  runId: string;
  /** Id of the last event this subscriber has (exclusive lower bound of what it gets). */
  cursor: string;
  deliver(events: readonly StoredRunEvent[]): void;
  /** The hub is closing (control-plane shutdown): end the stream; clients resume elsewhere. */
  close(): void;
}

/** Open streams per owner (token) and per control plane; beyond either, a new one is refused. */
export interface StreamLimits {
  perOwner: number;
  total: number;
}

export class StreamLimitError extends Error {
  constructor(
    readonly limit: 'owner' | 'total',
    readonly max: number,
  ) {
    super(
      limit === 'owner'
        ? `this token already has ${max} open event streams (the limit); close one first`
        : `this control plane serves its limit of ${max} event streams; retry later`,
    );
    this.name = 'StreamLimitError';
  }
}

export interface EventHubLog {
  warn(details: object, message: string): void;
}

/** Delivery only of events a Redis replica holds (store durable.ts): `generation()` before a
 * read, `confirm(generation)` after it, on the same connection. */
export interface ReplicatedReads {
  generation(): number;
  confirm(since: number): Promise<boolean>;
}

export interface EventHubOptions {
  prefix: string;
  /** The hub's blocking connection (XREAD BLOCK). */
  blocking: Redis;
  /** Absent: events are handed out as read. Present: a batch goes out only once a replica
   * holds it, so a failover never takes back an event a client has seen. */
  replicated?: ReplicatedReads;
  /** A regular connection, used to interrupt the blocked read. */
  control: Redis;
  blockMs: number;
  limits: StreamLimits;
  log: EventHubLog;
}

/** Pause before reading again a batch no replica confirmed. */
const UNCONFIRMED_RETRY_MS = 50;

export class EventHub {
  private readonly byRun = new Map<string, Set<EventSubscriber>>();
  private loop: Promise<void> | undefined;
  private blockingId: number | undefined;
  private reading = false;
  private closed = false;
  private readonly slots = new Map<string, number>();
  private reserved = 0;

  constructor(private readonly options: EventHubOptions) {}

  /** Takes a stream slot for `owner` or throws StreamLimitError; call the result to free it. */
  reserve(owner: string): () => void {
    const { perOwner, total } = this.options.limits;
    const held = this.slots.get(owner) ?? 0;
    if (held >= perOwner) throw new StreamLimitError('owner', perOwner);
    if (this.reserved >= total) throw new StreamLimitError('total', total);
    this.slots.set(owner, held + 1);
    this.reserved += 1;
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      this.reserved -= 1;
      const left = (this.slots.get(owner) ?? 1) - 1;
      if (left > 0) this.slots.set(owner, left);
      else this.slots.delete(owner);
    };
  }

  subscribe(subscriber: EventSubscriber): () => void {
    if (this.closed) throw new Error('event hub is closed');
    const set = this.byRun.get(subscriber.runId) ?? new Set();
    set.add(subscriber);
    this.byRun.set(subscriber.runId, set);
    this.changed();
    return () => {
      set.delete(subscriber);
      if (set.size === 0 && this.byRun.get(subscriber.runId) === set) {
        this.byRun.delete(subscriber.runId);
      }
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    const subscribers = [...this.byRun.values()].flatMap((set) => [...set]);
    this.byRun.clear();
    for (const subscriber of subscribers) subscriber.close();
    await this.interrupt();
    await this.loop;
    this.options.blocking.disconnect();
  }

  private changed(): void {
    if (!this.loop) {
      this.loop = this.run().finally(() => (this.loop = undefined));
      return;
    }
    void this.interrupt();
  }

  /** Wakes the blocked XREAD so the next one covers the current set of runs. */
  private async interrupt(): Promise<void> {
    if (!this.reading || this.blockingId === undefined) return;
    await this.options.control.client('UNBLOCK', this.blockingId).catch(() => {});
  }

  private async run(): Promise<void> {
    const { blocking, prefix, blockMs, log } = this.options;
    while (!this.closed && this.byRun.size > 0) {
      try {
        this.blockingId ??= Number(await blocking.client('ID'));
        const from = new Map<string, string>();
        for (const [runId, set] of this.byRun) {
          let oldest: string | undefined;
          for (const s of set) {
            if (oldest === undefined || compareEventIds(s.cursor, oldest) < 0) oldest = s.cursor;
          }
          from.set(runId, oldest ?? '0');
        }
        const since = this.options.replicated?.generation();
        this.reading = true;
        const batches = await readEventsOf(blocking, prefix, from, blockMs).finally(
          () => (this.reading = false),
        );
        if (batches.size > 0 && since !== undefined) {
          if (!(await this.options.replicated!.confirm(since))) {
            // Not on a replica yet (or read before a reconnect): read the same again.
            await new Promise((resolve) => setTimeout(resolve, UNCONFIRMED_RETRY_MS).unref());
            continue;
          }
        }
        for (const [runId, events] of batches) this.fanOut(runId, events, from.get(runId) ?? '0');
      } catch (error) {
        if (this.closed) return;
        log.warn({ err: String(error) }, 'event hub read failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, 1000).unref());
      }
    }
  }

  /** `readFrom`: the id this batch was read after. A subscriber that joined during the read
   * with an older cursor would miss the events between the two: it gets none of this batch and
   * is read from its own cursor on the next pass (the loop reads from the oldest cursor). */
  private fanOut(runId: string, events: readonly StoredRunEvent[], readFrom: string): void {
    for (const subscriber of [...(this.byRun.get(runId) ?? [])]) {
      if (compareEventIds(subscriber.cursor, readFrom) < 0) continue;
      const fresh = events.filter((e) => compareEventIds(e.id, subscriber.cursor) > 0);
      if (fresh.length === 0) continue;
      subscriber.cursor = fresh.at(-1)!.id;
      subscriber.deliver(fresh);
    }
  }
}
