// vLLM's engine-side LoRA cache, for the fake server (fake-server.ts). What it computes, as read
// in vLLM (files and commits in docs/engines.md "Conformance", vLLM rows):
// - `vllm/config/lora.py`@01230b40 `LoRAConfig`: `max_loras` (default 1) adapters per batch;
//   `max_cpu_loras` defaults to `max_loras` and may not be below it.
// - `vllm/lora/model_manager.py`@01533aa8 `LoRAModelManager`: `_registered_adapters` is an LRU of
//   capacity `max_cpu_loras` (the "CPU cache"), `_active_adapters` an LRU of `lora_slots` =
//   `max_loras` (GPU slots); `LRUCacheLoRAModelManager.remove_adapter` is false for an id the
//   registered cache no longer holds.
// - `vllm/lora/worker_manager.py`@0030b9ff `LRUCacheWorkerLoRAManager.add_adapter`: an id not in
//   the cache is read from its `lora_path` (evicting the least recently used one when full); an id
//   in it is touched. It runs both for `/v1/load_lora_adapter` (`add_lora`) and for every batch
//   that uses the adapter, so an evicted adapter is re-read from disk on its next request.
// The serving layer's names (`lora_requests`, what /v1/models lists) are the fake's `adapters`
// map; this module holds the int ids, the LRU order and the reads.
export interface LoraCacheOptions {
  /** `--max-loras`: distinct adapters in one batch. */
  maxLoras: number;
  /** `--max-cpu-loras`: adapters kept loaded (default `maxLoras`). */
  maxCpuLoras: number;
}

export class FakeLoraCache {
  /** Registered adapters, least recently used first: int id -> path. */
  private readonly registered = new Map<number, string>();
  /** Adapters of requests running now: int id -> requests. */
  private readonly running = new Map<number, number>();
  private readonly waiters: Array<() => void> = [];
  /** Every read of an adapter from disk, in order (loads and re-reads after eviction). */
  readonly reads: Array<{ id: number; path: string }> = [];
  /** Ids evicted by the LRU, in order. */
  readonly evicted: number[] = [];
  /** Most distinct adapters ever running together (never above `maxLoras`). */
  peakRunning = 0;

  constructor(
    readonly options: LoraCacheOptions,
    /** Reads the adapter at `path` (throws what vLLM would fail the load with). */
    private readonly read: (path: string) => Promise<void>,
  ) {
    if (options.maxCpuLoras < options.maxLoras) {
      throw new RangeError(
        `max_cpu_loras (${options.maxCpuLoras}) must be >= max_loras (${options.maxLoras})`,
      );
    }
  }

  /** Ids the cache holds now, least recently used first. */
  held(): number[] {
    return [...this.registered.keys()];
  }

  /** `add_adapter`: touch an id it holds, else evict the LRU one when full and read `path`. */
  async add(id: number, path: string, options: { reload?: boolean } = {}): Promise<void> {
    const cached = this.registered.get(id);
    if (cached !== undefined && !options.reload) {
      this.registered.delete(id);
      this.registered.set(id, cached);
      return;
    }
    await this.read(path);
    this.registered.delete(id);
    while (this.registered.size + 1 > this.options.maxCpuLoras) {
      const oldest = this.registered.keys().next().value as number;
      this.registered.delete(oldest);
      this.evicted.push(oldest);
    }
    this.registered.set(id, path);
    this.reads.push({ id, path });
  }

  /** `remove_adapter`: false when the LRU already evicted it. */
  remove(id: number): boolean {
    return this.registered.delete(id);
  }

  /** A request for adapter `id` enters the batch: it waits for one of the `maxLoras` slots when
   * that many other adapters are running, then the adapter is (re-)read if evicted. Returns the
   * release of its slot. */
  async run(id: number, path: string): Promise<() => void> {
    while (!this.running.has(id) && this.running.size >= this.options.maxLoras) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    this.running.set(id, (this.running.get(id) ?? 0) + 1);
    this.peakRunning = Math.max(this.peakRunning, this.running.size);
    const release = () => {
      const left = (this.running.get(id) ?? 1) - 1;
      if (left > 0) this.running.set(id, left);
      else this.running.delete(id);
      this.waiters.splice(0).forEach((wake) => wake());
    };
    try {
      await this.add(id, path);
    } catch (error) {
      release();
      throw error;
    }
    return release;
  }
}
