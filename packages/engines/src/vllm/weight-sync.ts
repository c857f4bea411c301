// Weight sync and health for the replicas of one endpoint (VLLM_API.md "Weight sync"):
// LoRA hot-reload with `load_inplace: true` on every replica, then `/reset_prefix_cache`
// (stale KV otherwise). A replica re-admitted after a failure gets every adapter again first.
import { EngineError } from '../http/errors.ts';
import type { LoadLoraAdapterRequest } from './wire.ts';
import type { Replica } from './replicas.ts';
import type { VllmEvent, VllmTransport } from './transport.ts';

export const LOAD_LORA_ROUTE = '/v1/load_lora_adapter';
export const RESET_PREFIX_CACHE_ROUTE = '/reset_prefix_cache';
export const HEALTH_ROUTE = '/health';

export class AdapterRegistry {
  /** Adapter name -> path, in load order; replayed onto re-admitted replicas. */
  private readonly adapters = new Map<string, string>();
  private version = 0;

  constructor(
    private readonly transport: VllmTransport,
    private readonly emit: (event: VllmEvent) => void,
  ) {}

  set(name: string, path: string): void {
    this.adapters.set(name, path);
    this.version += 1;
  }

  /** Load the given adapters onto one replica, then reset its prefix cache. */
  async loadOnto(
    replica: Replica,
    adapters: ReadonlyArray<readonly [string, string]>,
  ): Promise<void> {
    const timeoutMs = this.transport.config.syncTimeoutMs;
    for (const [name, path] of adapters) {
      const body: LoadLoraAdapterRequest = { lora_name: name, lora_path: path, load_inplace: true };
      await this.transport.direct(replica, LOAD_LORA_ROUTE, body, timeoutMs);
    }
    try {
      await this.transport.direct(replica, RESET_PREFIX_CACHE_ROUTE, undefined, timeoutMs);
    } catch (error) {
      if (error instanceof EngineError && error.status === 404) {
        error.message += ' (a dev-mode route: start vLLM with VLLM_SERVER_DEV_MODE=1)';
      }
      throw error;
    }
  }

  /** Bring a replica up to date with every adapter; repeats if a sync landed meanwhile. */
  async resync(replica: Replica): Promise<void> {
    let seen: number;
    do {
      seen = this.version;
      if (this.adapters.size > 0) await this.loadOnto(replica, [...this.adapters]);
    } while (seen !== this.version);
  }

  /** GET /health on every replica: drop failing ones, resync and re-admit recovered ones. */
  async checkHealth(): Promise<void> {
    const { pool, config } = this.transport;
    await Promise.all(
      pool.replicas.map(async (replica) => {
        const failure = await this.probe(replica, config.healthTimeoutMs);
        if (failure !== undefined) {
          this.transport.dropReplica(replica, failure);
          return;
        }
        if (replica.healthy) return;
        try {
          await this.resync(replica);
        } catch {
          return; // stays dropped; the next check tries again
        }
        pool.admit(replica);
        this.emit({ type: 'replica:up', endpoint: config.name, replica: replica.url });
      }),
    );
  }

  /** undefined when healthy, else the reason. */
  private async probe(replica: Replica, timeoutMs: number): Promise<string | undefined> {
    try {
      const reply = await this.transport.send(replica, 'GET', HEALTH_ROUTE, undefined, {
        timeoutMs,
      });
      return reply.status === 200 ? undefined : `/health answered ${reply.status}`;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }
}
