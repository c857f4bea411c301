// The replicas behind one named endpoint: who is admitted, who is busy. Requests go to the
// admitted replica with the fewest requests in flight (ties rotate, so load spreads evenly).
import type { EngineError } from '../http/errors.ts';

export interface Replica {
  readonly url: string;
  /** Admitted to traffic. Dropped replicas come back through a passing health check. */
  healthy: boolean;
  inFlight: number;
  /** Consecutive 5xx replies (reset by any success). */
  consecutiveFailures: number;
}

export interface ReplicaSnapshot {
  url: string;
  healthy: boolean;
  inFlight: number;
}

export class ReplicaPool {
  readonly replicas: Replica[];
  private cursor = 0;

  constructor(
    urls: readonly string[],
    private readonly failuresBeforeDrop: number,
  ) {
    this.replicas = urls.map((url) => ({
      url,
      healthy: true,
      inFlight: 0,
      consecutiveFailures: 0,
    }));
  }

  /** Least in-flight admitted replica among those `eligible` accepts; replicas in `avoid`
   * (already failed this request) are used only when no other is admitted. */
  pick(avoid: ReadonlySet<string>, eligible?: (replica: Replica) => boolean): Replica | undefined {
    const admitted = this.replicas.filter((r) => r.healthy && (eligible?.(r) ?? true));
    const fresh = admitted.filter((r) => !avoid.has(r.url));
    const candidates = fresh.length > 0 ? fresh : admitted;
    if (candidates.length === 0) return undefined;
    const count = this.replicas.length;
    let best: Replica | undefined;
    for (let k = 0; k < count; k += 1) {
      const replica = this.replicas[(this.cursor + k) % count] as Replica;
      if (!candidates.includes(replica)) continue;
      if (best === undefined || replica.inFlight < best.inFlight) best = replica;
    }
    this.cursor = (this.replicas.indexOf(best as Replica) + 1) % count;
    return best;
  }

  recordSuccess(replica: Replica): void {
    replica.consecutiveFailures = 0;
  }

  /** Returns true when this failure dropped the replica. Connection loss and timeouts drop
   * at once; 5xx replies after `failuresBeforeDrop` in a row; other statuses never. */
  recordFailure(replica: Replica, error: EngineError): boolean {
    if (!replica.healthy) return false;
    const status = error.context.status;
    if (status === undefined) return this.drop(replica);
    if (status < 500) return false;
    replica.consecutiveFailures += 1;
    return replica.consecutiveFailures >= this.failuresBeforeDrop ? this.drop(replica) : false;
  }

  drop(replica: Replica): boolean {
    if (!replica.healthy) return false;
    replica.healthy = false;
    return true;
  }

  admit(replica: Replica): void {
    replica.healthy = true;
    replica.consecutiveFailures = 0;
  }

  snapshot(): ReplicaSnapshot[] {
    return this.replicas.map(({ url, healthy, inFlight }) => ({ url, healthy, inFlight }));
  }
}
