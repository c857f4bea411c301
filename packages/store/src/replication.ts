// Acknowledged writes and Redis replication. Redis replicates asynchronously: a primary that
// dies loses whatever its replicas had not received yet, and Sentinel promotes a replica that
// lacks it. A write Anneal acknowledges (a submission's 201, a committed step, a checkpoint
// pointer, a state change) is therefore confirmed with WAIT — on the connection that wrote it,
// since WAIT counts the replicas that reached that connection's last write — before it counts.
//
// Two traps. A reconnect between the write and its WAIT (ioredis re-sends unanswered commands
// after a failover, to the new primary) makes WAIT answer for a connection that wrote nothing:
// the confirmation is void, so the write (every acknowledged write is idempotent) is sent again
// and confirmed afresh — also when the new primary has no replica to wait for (a failover to
// the last replica). And WAIT for more replicas than are connected blocks for its whole timeout:
// in `auto` mode the guard waits for one replica only on a primary that has had one.
import type { Redis } from 'ioredis';

/** Replicas that must hold a write before Anneal acknowledges it: a count (0 = never wait), or
 * `auto` = 1 once the primary has been seen with a connected replica (and from then on, even
 * while its link is down), else 0. */
export type ReplicaRequirement = 'auto' | number;

export interface ReplicationOptions {
  replicas: ReplicaRequirement;
  /** WAIT timeout of one confirmation. */
  timeoutMs: number;
  /** How long to keep re-confirming a write its replicas do not confirm (0 = fail at once). */
  retryForMs?: number;
  /** auto: how long a replica count read from INFO is trusted. */
  probeMs?: number;
}

export const DEFAULT_REPLICATION: Readonly<ReplicationOptions> = Object.freeze({
  replicas: 'auto',
  timeoutMs: 2000,
});

/** The primary took the write, but not enough replicas confirmed it: it is not acknowledged
 * (it may or may not survive a failover). */
export class NotReplicatedError extends Error {
  constructor(
    readonly what: string,
    readonly acked: number,
    readonly required: number,
    readonly timeoutMs: number,
  ) {
    super(
      `${what}: written to the Redis primary but confirmed by ${acked} of ${required} ` +
        `replica(s) within ${timeoutMs} ms, so not acknowledged`,
    );
    this.name = 'NotReplicatedError';
  }
}

export interface ReplicationGuard {
  readonly options: Readonly<ReplicationOptions>;
  /** Bumped whenever the connection closes: a reply after a bump came over a new connection. */
  readonly generation: number;
  /** Replicas a write must reach now (`refresh` re-reads INFO in auto mode). */
  required(refresh?: boolean): Promise<number>;
  /**
   * `write` (idempotent), then WAIT until the required replicas hold it. A reconnect in between
   * sends it again; `merge(first, again)` combines the replies (the second may say "already
   * there"). Throws NotReplicatedError once `retryForMs` is spent.
   */
  confirm<T>(what: string, write: () => Promise<T>, merge?: (first: T, again: T) => T): Promise<T>;
  /**
   * True when everything this connection read since `generation` is on the required replicas:
   * a write (`SET key`) and WAIT on the same connection; replication is in order, so replicas
   * that hold the SET hold all the primary had before it. False: not confirmed (yet).
   */
  fence(key: string, generation: number): Promise<boolean>;
}

/** Confirmations voided by a reconnect before a write gives up. */
const MAX_RECONNECTS = 10;

const guards = new WeakMap<Redis, ReplicationGuard>();

/** The guard of `redis` (one per connection; the first caller's options win). */
export function replicationGuard(redis: Redis, options: ReplicationOptions): ReplicationGuard {
  let guard = guards.get(redis);
  if (!guard) {
    guard = createGuard(redis, options);
    guards.set(redis, guard);
  }
  return guard;
}

/** From `INFO replication`: the primary's replication id and its connected replicas. */
function replicationState(info: string): { replid: string; connected: number } {
  return {
    replid: /^master_replid:(\S+)/m.exec(info)?.[1] ?? '',
    connected: Number(/^connected_slaves:(\d+)/m.exec(info)?.[1] ?? 0),
  };
}

function checkOptions(options: ReplicationOptions): void {
  const { replicas, timeoutMs } = options;
  if (replicas !== 'auto' && !(Number.isInteger(replicas) && replicas >= 0)) {
    throw new RangeError(`replicas must be 'auto' or an integer >= 0, got ${String(replicas)}`);
  }
  if (!(Number.isInteger(timeoutMs) && timeoutMs >= 1)) {
    throw new RangeError(`timeoutMs must be an integer >= 1, got ${timeoutMs}`);
  }
}

function createGuard(redis: Redis, options: ReplicationOptions): ReplicationGuard {
  checkOptions(options);
  const probeMs = options.probeMs ?? 1000;
  const retryForMs = options.retryForMs ?? 0;
  let generation = 0;
  let probed: { count: number; at: number } | null = null;
  // auto: the primary (its replication id) that was last seen with a replica. A replica whose
  // link drops is still waited for: otherwise the writes of that window would be acknowledged
  // on the primary alone, and lost with it if it died before the replica was back. After a
  // failover the new primary has a new id and counts afresh.
  let seenWithReplica = '';
  redis.on('close', () => {
    generation += 1;
    probed = null; // after a failover the primary (and its replicas) may be another
  });

  const required = async (refresh = false): Promise<number> => {
    if (options.replicas !== 'auto') return options.replicas;
    if (!refresh && probed && Date.now() - probed.at < probeMs) return probed.count;
    const { replid, connected } = replicationState(await redis.info('replication'));
    if (connected > 0) seenWithReplica = replid;
    const count = connected > 0 || (replid !== '' && replid === seenWithReplica) ? 1 : 0;
    probed = { count, at: Date.now() };
    return count;
  };

  /** Replicas that confirmed, or null when the connection changed meanwhile. */
  const waitFor = async (need: number, since: number): Promise<number | null> => {
    const acked = Number(await redis.wait(need, options.timeoutMs));
    return generation === since ? acked : null;
  };

  return {
    options,
    get generation() {
      return generation;
    },
    required,
    async confirm<T>(
      what: string,
      write: () => Promise<T>,
      merge?: (first: T, again: T) => T,
    ): Promise<T> {
      const deadline = Date.now() + retryForMs;
      let value: T | undefined;
      let written = false;
      let reconnects = 0;
      for (;;) {
        const since = generation;
        const reply = await write();
        value = written && merge ? merge(value as T, reply) : reply;
        written = true;
        const need = await required();
        // The connection changed after the write (before or while asking for replicas): the
        // reply came from a primary that may be gone, and a new primary with no replica
        // (need 0) says nothing about it. Send it again.
        const acked = generation !== since ? null : need === 0 ? 0 : await waitFor(need, since);
        if (acked === null) {
          // The connection changed: that WAIT proved nothing about the write. Send it again.
          reconnects += 1;
          if (reconnects > MAX_RECONNECTS) {
            throw new NotReplicatedError(
              `${what} (the connection kept changing)`,
              0,
              need,
              options.timeoutMs,
            );
          }
          continue;
        }
        if (acked >= need) return value;
        // Replicas lag: confirm again (the write is re-sent: idempotent) until the budget is spent.
        if (Date.now() >= deadline) {
          throw new NotReplicatedError(what, acked, need, options.timeoutMs);
        }
      }
    },
    async fence(key, since) {
      const need = await required();
      // What was read before a reconnect came from a primary that may be gone.
      if (generation !== since) return false;
      if (need === 0) return true;
      await redis.set(key, String(Date.now()));
      const acked = await waitFor(need, since);
      if (acked === null) return false;
      return acked >= need;
    },
  };
}

/** `auto` or a replica count, as an environment variable spells it (throws naming the value). */
export function parseReplicaRequirement(text: string): ReplicaRequirement {
  if (text === 'auto') return 'auto';
  if (/^\d+$/.test(text) && Number(text) <= 16) return Number(text);
  throw new RangeError(`expected 'auto' or a replica count 0..16, got '${text}'`);
}
