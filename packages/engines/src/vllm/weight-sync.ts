// Weight sync and health for the replicas of one endpoint (docs/engines.md "Weight sync").
// The engine's view of served weights: it follows the caller's loadWeights/releaseWeights and
// never chooses which policy version to serve (the worker's GRPO executor owns that,
// docs/architecture.md "One GRPO step").
//
// Every `loadWeights({name, path})` is a new *version* of `name`, served by vLLM under its own
// adapter name `<name>@<instance>.<version>` (`instance`: an id drawn once per engine, so a
// restarted worker, a retried attempt or a second engine in one process never reuses a name an
// earlier one loaded on the same server):
// - vLLM up to v0.11.x refuses a second load under one name (400 "has already been loaded");
//   `load_inplace` (vLLM PR #31326) exists only on newer servers, swaps weights under requests
//   already running, and (until vLLM PR #41482) leaves the adapter re-read from disk on every
//   later request. A fresh name per version avoids all three, on every server generation.
// - Requests for `name` are pinned to the newest version loaded on every replica that took part
//   in the sync (a lease, taken when `sample` starts); a request started on version k finishes on
//   k, retries included. Version k+1 only becomes current once its sync has finished.
// - A superseded version is unloaded once its last lease is released.
// - No prefix-cache reset: vLLM keys cached KV blocks by LoRA adapter name
//   (vllm/v1/core/kv_cache_utils.py `_gen_lora_extra_hash_keys`), so a fresh name per version
//   never reads KV computed with other weights. Names never repeat across engines either: a
//   server keeps a name's cached blocks across unload and reload, so a name
//   reloaded with other weights could be served KV of the old ones. (`/reset_prefix_cache` is
//   registered only with VLLM_SERVER_DEV_MODE, which also exposes routes no production server
//   should.)
// vLLM's LoRA cache (adapter-calls.ts): an unload of an adapter the server's LRU already evicted
// is settled there, never retried; a name a replica already lists with the version's path is
// loaded (no unload and reload); a stale name that cannot be removed never keeps a replica out.
// A shared adapter (a shared reference, docs/operations.md "Shared references") is loaded under
// its own name verbatim, the same in every worker that serves it (its name is new per
// generation, so it is never reused for other weights either); loading it again from the same
// path changes nothing, and a worker whose runs stop using it while others still do forgets it
// without unloading it (`forget`). Its last user's release unloads it wherever it is listed.
// Files: a version's unpacked directory (and a download of this worker's) is removed once no
// replica lists its name any more, never earlier: vLLM re-reads an evicted adapter from its path
// for as long as the name is loaded.
// Load failures are sorted: a replica that refuses the connection or whose `/health` fails is
// dropped and resynced on re-admission; a server that is healthy but rejects the adapter (404 path
// missing; 400 on v0.11 / 500 on main for e.g. a rank above `--max-lora-rank`) fails the sync
// with ANNEAL_ERR_ENGINE_BAD_ADAPTER and the replica stays in rotation.
import { randomBytes } from 'node:crypto';
import { ENGINE_ERROR_CODES, EngineError } from '../http/errors.ts';
import type { HttpReply } from '../http/request.ts';
import {
  LOAD_LORA_ROUTE,
  badAdapterError,
  isRouteMissing,
  listAdapters,
  unloadAdapter,
} from './adapter-calls.ts';
import { readVllmError, vllmHttpError } from './errors.ts';
import type { Replica } from './replicas.ts';
import type { VllmEvent, VllmTransport } from './transport.ts';
import type { LoadLoraAdapterRequest } from './wire.ts';

export const HEALTH_ROUTE = '/health';

/** vLLM's 400 for a second load under one name (both generations; newer ones add a hint). */
const ALREADY_LOADED = /has already been loaded/;

/** What an adapter instance id may be: short, and free of the `@`/`.` the name is split on. */
const INSTANCE_ID = /^[A-Za-z0-9_-]{1,16}$/;

/** A fresh weight-sync instance id: 16 random hex digits, 64 bits from the CSPRNG (drawn once
 * per engine), so nobody can guess another run's adapter names (docs/security.md "Isolation
 * between runs"). */
export function newAdapterInstance(): string {
  return randomBytes(8).toString('hex');
}

/** The vLLM adapter name of version `version` of `name`, loaded by weight-sync instance
 * `instance`. */
export function versionedAdapterName(name: string, instance: string, version: number): string {
  return `${name}@${instance}.${version}`;
}

/** The parts of a name made by `versionedAdapterName`; undefined for any other name. */
export function parseVersionedAdapterName(
  adapter: string,
): { name: string; instance: string; version: number } | undefined {
  const match = /^(.+)@([A-Za-z0-9_-]{1,16})\.([1-9]\d*)$/.exec(adapter);
  if (match === null) return undefined;
  const [, name = '', instance = '', version = ''] = match;
  return { name, instance, version: Number(version) };
}

interface AdapterVersion {
  readonly name: string;
  readonly version: number;
  /** What vLLM serves it as: `<name>@<instance>.<version>`. */
  readonly adapter: string;
  readonly path: string;
  /** Replica URLs that hold it. */
  readonly on: Set<string>;
  /** Sample requests pinned to it. */
  refs: number;
  /** Superseded or released: unloaded once `refs` reaches 0. */
  retired: boolean;
  /** Removes the files this worker made for it (see the file comment). */
  readonly removeFiles: (() => Promise<void>) | undefined;
}

/** A sample request's hold on one adapter version. */
export interface AdapterLease {
  /** The `model` to send. */
  readonly adapter: string;
  /** Only these replicas serve it. */
  readonly servedBy: (replicaUrl: string) => boolean;
  release(): void;
}

export interface AdapterSnapshot {
  name: string;
  /** The vLLM adapter new requests use. */
  current: string | undefined;
  /** Every version still loaded somewhere (current and draining ones). */
  loaded: Array<{ adapter: string; path: string; replicas: string[]; inFlight: number }>;
}

export class AdapterRegistry {
  private readonly current = new Map<string, AdapterVersion>();
  private readonly versions = new Set<AdapterVersion>();
  private readonly nextVersion = new Map<string, number>();
  /** Replica url -> vLLM adapter names to unload when it is re-admitted. */
  private readonly staleOn = new Map<string, Set<string>>();
  /** Replica url -> adapters it rejected on re-admission (not retried there). */
  private readonly rejectedOn = new Map<string, Set<string>>();
  /** Shared adapters this engine stopped serving while other engines still do, by adapter
   * name: their files go once a release unloads them. */
  private readonly forgotten = new Map<string, AdapterVersion>();
  /** Unloaded versions whose files wait for a replica out of rotation to unload them. */
  private readonly filesPending = new Map<string, AdapterVersion>();
  private chain: Promise<unknown> = Promise.resolve();

  /** `instance`: this registry's id in every adapter name (see the file comment). */
  constructor(
    private readonly transport: VllmTransport,
    private readonly emit: (event: VllmEvent) => void,
    readonly instance: string = newAdapterInstance(),
  ) {
    if (!INSTANCE_ID.test(instance)) {
      throw new RangeError(
        `vLLM endpoint '${transport.config.name}': adapter instance id '${instance}' must be ` +
          '1-16 characters of A-Z a-z 0-9 _ -',
      );
    }
  }

  /** Pins a request for `model` to the current version of that name; undefined when `model` is
   * no name loaded through `sync` (the base model, or an adapter name used verbatim). */
  lease(model: string): AdapterLease | undefined {
    const version = this.current.get(model);
    if (version === undefined) return undefined;
    version.refs += 1;
    let released = false;
    return {
      adapter: version.adapter,
      servedBy: (url) => version.on.has(url),
      release: () => {
        if (released) return;
        released = true;
        version.refs -= 1;
        // Unloads failing on a replica are remembered and retried when it is re-admitted.
        if (version.retired && version.refs === 0) void this.dispose(version);
      },
    };
  }

  /** Loads `path` as the next version of `name` on `targets` (the admitted replicas; the caller
   * health-checks first when there are none), then makes it current. `removeFiles`: called once
   * no replica lists the version any more. */
  sync(
    name: string,
    path: string,
    targets: () => Promise<Replica[]>,
    removeFiles?: () => Promise<void>,
    shared = false,
  ): Promise<void> {
    return this.serialized(async () => {
      const served = this.current.get(name);
      if (shared && served?.adapter === name && served.path === path) return;
      const version = this.createVersion(name, path, removeFiles, shared);
      const replicas = await targets();
      const outcomes = await Promise.allSettled(
        replicas.map(async (replica) => {
          await this.loadAdapter(replica, version);
          version.on.add(replica.url);
        }),
      );
      const errors: unknown[] = [];
      outcomes.forEach((outcome, i) => {
        const replica = replicas[i];
        if (outcome.status === 'fulfilled' || replica === undefined) return;
        const error: unknown = outcome.reason;
        if (error instanceof EngineError && error.retryable) {
          version.on.delete(replica.url);
          this.transport.dropReplica(replica, error.message); // resynced when re-admitted
        }
        errors.push(error);
      });
      const fatal = errors.find((e) => !(e instanceof EngineError && e.retryable));
      if (fatal !== undefined || version.on.size === 0) {
        this.versions.delete(version);
        await this.unloadEverywhere(version);
        if (fatal !== undefined) throw fatal;
        throw new EngineError(
          ENGINE_ERROR_CODES.noReplica,
          { engine: 'vLLM', endpoint: this.transport.config.name },
          `no replica accepted weights '${name}' (${path}): ` +
            (errors.map((e) => (e instanceof Error ? e.message : String(e))).join('; ') ||
              'no replica is healthy'),
        );
      }
      const previous = this.current.get(name);
      this.current.set(name, version);
      if (previous !== undefined) await this.retire(previous);
    });
  }

  /** Stops serving every version of `name`; versions still in use are unloaded when drained.
   * Replicas out of rotation unload them when they are re-admitted. `shared`: a shared adapter
   * name this engine does not serve is still unloaded from every replica that lists it. */
  release(name: string, options: { shared?: boolean } = {}): Promise<void> {
    return this.serialized(async () => {
      const version = this.current.get(name);
      this.current.delete(name);
      const draining = [...this.versions].filter((v) => v.name === name && v !== version);
      if (version !== undefined) await this.retire(version);
      await Promise.all(draining.filter((v) => v.refs === 0).map((v) => this.dispose(v)));
      if (options.shared && version === undefined && draining.length === 0) {
        await this.unloadListed(name);
      }
    });
  }

  /** Stops serving `name` from this engine without unloading it: the servers keep it for the
   * other workers that serve it (a shared adapter). Requests already pinned to it finish. */
  forget(name: string): Promise<void> {
    return this.serialized(async () => {
      this.current.delete(name);
      for (const version of [...this.versions]) {
        if (version.name !== name) continue;
        this.versions.delete(version);
        this.forgotten.set(version.adapter, version);
      }
    });
  }

  /** Unloads a shared `adapter` this engine does not serve from every admitted replica that
   * lists it (a replica out of rotation unloads it when it is re-admitted), then removes the
   * files this engine made for it, if it served it before. */
  private async unloadListed(adapter: string): Promise<void> {
    const version: AdapterVersion = this.forgotten.get(adapter) ?? {
      name: adapter,
      version: 0,
      adapter,
      path: '',
      on: new Set(),
      refs: 0,
      retired: true,
      removeFiles: undefined,
    };
    this.forgotten.delete(adapter);
    await Promise.all(
      this.transport.pool.replicas.map(async (replica) => {
        if (!replica.healthy) return this.markStale(replica.url, version);
        try {
          // The path (for an evicted adapter's reload) is this engine's when it served it;
          // otherwise the replica's list says whether it holds the name and where from.
          const path = version.path || (await listAdapters(this.transport, replica)).get(adapter);
          if (path !== undefined) await this.unloadFrom(replica, adapter, path);
        } catch {
          this.markStale(replica.url, version);
        }
      }),
    );
    await this.removeFilesOnceUnloaded(version);
  }

  snapshot(): AdapterSnapshot[] {
    const names = new Set([...this.versions].map((v) => v.name));
    // replicas in the endpoint's order, not the order their loads happened to finish in
    const urls = this.transport.pool.replicas.map((r) => r.url);
    const rank = (url: string) => {
      const at = urls.indexOf(url);
      return at < 0 ? urls.length : at;
    };
    return [...names].map((name) => ({
      name,
      current: this.current.get(name)?.adapter,
      loaded: [...this.versions]
        .filter((v) => v.name === name)
        .map((v) => ({
          adapter: v.adapter,
          path: v.path,
          replicas: [...v.on].sort((a, b) => rank(a) - rank(b)),
          inFlight: v.refs,
        })),
    }));
  }

  /** GET /health on every replica: drop failing ones, resync and re-admit recovered ones.
   * `inSync`: called from within a sync (already serialized). */
  async checkHealth(options: { inSync?: boolean } = {}): Promise<void> {
    const { pool, config } = this.transport;
    const recovered: Replica[] = [];
    await Promise.all(
      pool.replicas.map(async (replica) => {
        const failure = await this.probe(replica, config.healthTimeoutMs);
        if (failure !== undefined) this.transport.dropReplica(replica, failure);
        else if (!replica.healthy) recovered.push(replica);
      }),
    );
    if (recovered.length === 0) return;
    const readmit = () =>
      Promise.all(
        recovered.map(async (replica) => {
          try {
            await this.resync(replica);
          } catch {
            return; // stays dropped; the next check tries again
          }
          pool.admit(replica);
          this.emit({ type: 'replica:up', endpoint: config.name, replica: replica.url });
        }),
      );
    await (options.inSync ? readmit() : this.serialized(readmit));
  }

  /** Unload `adapter` from one replica (adapter-calls.ts `unloadAdapter`); `kept`: vLLM main
   * evicted it and its files can no longer be read, so the name stays listed there. */
  private async unloadFrom(replica: Replica, adapter: string, path: string): Promise<void> {
    const outcome = await unloadAdapter(this.transport, replica, adapter, path);
    if (outcome === 'kept') {
      this.emit({
        type: 'adapter:kept',
        endpoint: this.transport.config.name,
        replica: replica.url,
        adapter,
        path,
      });
    }
  }

  private createVersion(
    name: string,
    path: string,
    removeFiles: (() => Promise<void>) | undefined,
    shared: boolean,
  ): AdapterVersion {
    const number = this.nextVersion.get(name) ?? 1;
    this.nextVersion.set(name, number + 1);
    const version: AdapterVersion = {
      name,
      version: number,
      adapter: shared ? name : versionedAdapterName(name, this.instance, number),
      path,
      on: new Set(),
      refs: 0,
      retired: false,
      removeFiles,
    };
    this.versions.add(version);
    return version;
  }

  private async retire(version: AdapterVersion): Promise<void> {
    version.retired = true;
    if (version.refs === 0) await this.dispose(version);
  }

  /** Unload a drained version from every replica that holds it. */
  private async dispose(version: AdapterVersion): Promise<void> {
    if (!this.versions.delete(version)) return;
    await this.unloadEverywhere(version);
  }

  private async unloadEverywhere(version: AdapterVersion): Promise<void> {
    const holders = this.transport.pool.replicas.filter((r) => version.on.has(r.url));
    await Promise.all(
      holders.map(async (replica) => {
        try {
          if (!replica.healthy) throw new Error('out of rotation');
          await this.unloadFrom(replica, version.adapter, version.path);
        } catch {
          this.markStale(replica.url, version);
        }
        version.on.delete(replica.url);
      }),
    );
    await this.removeFilesOnceUnloaded(version);
  }

  private markStale(replicaUrl: string, version: AdapterVersion): void {
    const stale = this.staleOn.get(replicaUrl) ?? new Set<string>();
    stale.add(version.adapter);
    this.staleOn.set(replicaUrl, stale);
    this.filesPending.set(version.adapter, version);
  }

  /** Removes a version's files once no replica may list it and no live version reads the same
   * path; failures to remove are not the sync's (the next run of the same path would reuse it). */
  private async removeFilesOnceUnloaded(version: AdapterVersion): Promise<void> {
    const listedSomewhere = [...this.staleOn.values()].some((s) => s.has(version.adapter));
    if (listedSomewhere || version.removeFiles === undefined) return;
    this.filesPending.delete(version.adapter);
    if ([...this.versions].some((v) => v.path === version.path)) return;
    await version.removeFiles().catch(() => undefined);
  }

  /** POST /v1/load_lora_adapter for one version on one replica (see the file comment for how
   * failures are told apart). A name the replica already holds (a retry whose first reply was
   * lost, or a replica re-admitted after a blip: names carry this instance's id, so never
   * another engine's) is loaded when the replica lists it with this path; with another path it
   * is unloaded and loaded again (no request of ours uses a version before its sync completes). */
  private async loadAdapter(replica: Replica, version: AdapterVersion): Promise<void> {
    const body: LoadLoraAdapterRequest = { lora_name: version.adapter, lora_path: version.path };
    let reloaded = false;
    const interpret = async (reply: HttpReply): Promise<'send-again' | 'done'> => {
      const info = readVllmError(reply);
      if (reply.status === 400 && ALREADY_LOADED.test(info.message) && !reloaded) {
        reloaded = true;
        const listed = await listAdapters(this.transport, replica);
        if (listed.get(version.adapter) === version.path) return 'done';
        const previous = listed.get(version.adapter) ?? version.path;
        await this.unloadFrom(replica, version.adapter, previous);
        return 'send-again';
      }
      const context = this.transport.context(replica.url, LOAD_LORA_ROUTE);
      if (reply.status === 404 && isRouteMissing(reply)) {
        const error = vllmHttpError(context, reply);
        error.message +=
          ' (runtime LoRA loading is off: start vLLM with --enable-lora and ' +
          'VLLM_ALLOW_RUNTIME_LORA_UPDATING=True)';
        throw error;
      }
      if (reply.status >= 500 || reply.status === 429) {
        // A healthy server that answers 500 rejected the adapter; a sick one is a replica problem.
        const sick = await this.probe(replica, this.transport.config.healthTimeoutMs);
        if (sick !== undefined || reply.status === 503 || reply.status === 429) {
          const error = vllmHttpError(context, reply);
          if (sick !== undefined) error.message += ` (and ${sick})`;
          throw error;
        }
      }
      throw badAdapterError(context, reply, version);
    };
    await this.transport.direct(
      replica,
      LOAD_LORA_ROUTE,
      body,
      this.transport.config.syncTimeoutMs,
      interpret,
    );
  }

  /** Bring a recovering replica up to date: what it lists is read first (it may have restarted,
   * holding nothing, or only been unreachable, holding everything); current versions it lists
   * with their path count as loaded, the others are loaded; names of this engine it should not
   * hold are unloaded, and one that cannot be removed stays pending for the next re-admission
   * without keeping the replica out. An adapter it rejects (e.g. its path vanished there) is
   * skipped on that replica (event `adapter:dropped`) so the replica still comes back; connection
   * loss / an unhealthy server throws and it stays out. */
  private async resync(replica: Replica): Promise<void> {
    const listed = await listAdapters(this.transport, replica);
    const stale = this.staleOn.get(replica.url) ?? new Set<string>();
    for (const version of this.versions) {
      version.on.delete(replica.url);
      if (this.current.get(version.name) !== version) {
        if (listed.has(version.adapter)) stale.add(version.adapter);
      } else if (listed.get(version.adapter) === version.path) {
        version.on.add(replica.url);
      }
    }
    for (const adapter of listed.keys()) {
      const parsed = parseVersionedAdapterName(adapter);
      const current = parsed && this.current.get(parsed.name);
      if (parsed?.instance === this.instance && current?.adapter !== adapter) stale.add(adapter);
    }
    this.staleOn.set(replica.url, stale);
    for (const adapter of [...stale]) {
      if (!listed.has(adapter)) stale.delete(adapter);
      else {
        try {
          await this.unloadFrom(replica, adapter, listed.get(adapter) as string);
          stale.delete(adapter);
        } catch (error) {
          if (!(error instanceof EngineError) || error.context.status === undefined) throw error;
        }
      }
      const pending = this.filesPending.get(adapter);
      if (pending !== undefined && !stale.has(adapter)) await this.removeFilesOnceUnloaded(pending);
    }
    if (stale.size === 0) this.staleOn.delete(replica.url);
    const rejected = this.rejectedOn.get(replica.url) ?? new Set<string>();
    for (const version of this.current.values()) {
      if (version.on.has(replica.url) || rejected.has(version.adapter)) continue;
      try {
        await this.loadAdapter(replica, version);
        version.on.add(replica.url);
      } catch (error) {
        if (!(error instanceof EngineError) || error.retryable) throw error;
        rejected.add(version.adapter);
        this.rejectedOn.set(replica.url, rejected);
        this.emit({
          type: 'adapter:dropped',
          endpoint: this.transport.config.name,
          replica: replica.url,
          adapter: version.name,
          path: version.path,
          reason: error.message,
        });
      }
    }
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

  private serialized<T>(run: () => Promise<T>): Promise<T> {
    const next = this.chain.then(run, run);
    this.chain = next.catch(() => undefined);
    return next;
  }
}
