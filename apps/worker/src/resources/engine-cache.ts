// Engines are created once per named endpoint and shared by every run in this process
// (connection pools, sessions, worker threads, loaded models); all are closed on shutdown.

interface Closable {
  close(): Promise<void>;
}

export class EngineCache {
  private readonly entries = new Map<string, Promise<Closable>>();
  private closed = false;

  /** The engine cached under `key`, created by `create` on first use. A failed creation is
   * forgotten so the next run retries it (the endpoint may have been down). */
  get<T extends Closable>(key: string, create: () => Promise<T> | T): Promise<T> {
    if (this.closed) return Promise.reject(new Error('the worker is shutting down'));
    let entry = this.entries.get(key);
    if (!entry) {
      entry = Promise.resolve().then(create);
      this.entries.set(key, entry);
      entry.catch(() => {
        if (this.entries.get(key) === entry) this.entries.delete(key);
      });
    }
    return entry as Promise<T>;
  }

  keys(): string[] {
    return [...this.entries.keys()];
  }

  /** Closes every created engine; returns the errors of those that failed to close. */
  async closeAll(): Promise<unknown[]> {
    this.closed = true;
    const entries = [...this.entries.values()];
    this.entries.clear();
    const results = await Promise.allSettled(
      entries.map(async (entry) => {
        const engine = await entry.catch(() => null);
        await engine?.close();
      }),
    );
    return results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  }
}
