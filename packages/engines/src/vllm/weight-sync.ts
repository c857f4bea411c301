// Weight sync and health for the replicas of one endpoint (docs/engines.md "Weight sync"):
// LoRA hot-reload with `load_inplace: true` on every replica, then `/reset_prefix_cache`
// (stale KV otherwise). A replica re-admitted after a failure gets every live adapter again
// first; adapters released while it was out are unloaded from it; one adapter that no longer
// loads (its path vanished) is dropped instead of keeping the replica out forever.
import { EngineError } from '../http/errors.ts';
import type { LoadLoraAdapterRequest, UnloadLoraAdapterRequest } from './wire.ts';
import type { Replica } from './replicas.ts';
import type { VllmEvent, VllmTransport } from './transport.ts';

export const LOAD_LORA_ROUTE = '/v1/load_lora_adapter';
export const UNLOAD_LORA_ROUTE = '/v1/unload_lora_adapter';
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

  /** Replica url -> adapters released while it was out of rotation (unloaded on re-admission). */
  private readonly staleOn = new Map<string, Set<string>>();

  set(name: string, path: string): void {
    this.adapters.set(name, path);
    this.version += 1;
  }

  has(name: string): boolean {
    return this.adapters.has(name);
  }

  /** Forget an adapter; `unreached` replicas unload it when they are re-admitted. */
  remove(name: string, unreached: readonly Replica[]): void {
    this.adapters.delete(name);
    this.version += 1;
    for (const replica of unreached) {
      const stale = this.staleOn.get(replica.url) ?? new Set<string>();
      stale.add(name);
      this.staleOn.set(replica.url, stale);
    }
  }

  /** POST /v1/unload_lora_adapter; an adapter the replica does not have (404/400) is fine. */
  async unloadFrom(replica: Replica, name: string): Promise<void> {
    const body: UnloadLoraAdapterRequest = { lora_name: name };
    try {
      await this.transport.direct(
        replica,
        UNLOAD_LORA_ROUTE,
        body,
        this.transport.config.syncTimeoutMs,
      );
    } catch (error) {
      if (error instanceof EngineError && !error.retryable) return; // already gone there
      throw error;
    }
  }

  /** Load the given adapters onto one replica, then reset its prefix cache. */
  async loadOnto(
    replica: Replica,
    adapters: ReadonlyArray<readonly [string, string]>,
    options: { resetCache?: boolean } = {},
  ): Promise<void> {
    const timeoutMs = this.transport.config.syncTimeoutMs;
    for (const [name, path] of adapters) {
      const body: LoadLoraAdapterRequest = { lora_name: name, lora_path: path, load_inplace: true };
      await this.transport.direct(replica, LOAD_LORA_ROUTE, body, timeoutMs);
    }
    if (options.resetCache === false) return;
    try {
      await this.transport.direct(replica, RESET_PREFIX_CACHE_ROUTE, undefined, timeoutMs);
    } catch (error) {
      if (error instanceof EngineError && error.status === 404) {
        error.message += ' (a dev-mode route: start vLLM with VLLM_SERVER_DEV_MODE=1)';
      }
      throw error;
    }
  }

  /** Bring a replica up to date with every live adapter; repeats if a sync landed meanwhile.
   * Connection loss / 5xx throw (the replica stays out); an adapter the replica rejects (4xx,
   * e.g. its path is gone) is logged and dropped so the replica can come back. */
  async resync(replica: Replica): Promise<void> {
    for (const name of this.staleOn.get(replica.url) ?? []) {
      if (!this.adapters.has(name)) await this.unloadFrom(replica, name);
    }
    this.staleOn.delete(replica.url);
    let seen: number;
    do {
      seen = this.version;
      const live = [...this.adapters];
      if (live.length === 0) continue;
      for (const [name, path] of live) {
        try {
          await this.loadOnto(replica, [[name, path]], { resetCache: false });
        } catch (error) {
          if (!(error instanceof EngineError) || error.retryable) throw error;
          if (this.adapters.get(name) === path) this.adapters.delete(name);
          this.emit({
            type: 'adapter:dropped',
            endpoint: this.transport.config.name,
            replica: replica.url,
            adapter: name,
            path,
            reason: error.message,
          });
        }
      }
      await this.loadOnto(replica, []);
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
