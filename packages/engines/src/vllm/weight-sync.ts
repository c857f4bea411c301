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
// Load failures are sorted: a replica that refuses the connection or whose `/health` fails is
// dropped and resynced on re-admission; a server that is healthy but rejects the adapter (404 path
// missing; 400 on v0.11 / 500 on main for e.g. a rank above `--max-lora-rank`) fails the sync
// with ANNEAL_ERR_ENGINE_BAD_ADAPTER and the replica stays in rotation.
import { randomBytes } from 'node:crypto';
import { ENGINE_ERROR_CODES, EngineError, describeHttpFailure } from '../http/errors.ts';
import { isObject } from '../http/request.ts';
import type { HttpReply } from '../http/request.ts';
import { readVllmError, vllmHttpError } from './errors.ts';
import type { Replica } from './replicas.ts';
import type { VllmEvent, VllmTransport } from './transport.ts';
import type { LoadLoraAdapterRequest, UnloadLoraAdapterRequest } from './wire.ts';

export const LOAD_LORA_ROUTE = '/v1/load_lora_adapter';
export const UNLOAD_LORA_ROUTE = '/v1/unload_lora_adapter';
export const HEALTH_ROUTE = '/health';

/** vLLM's 400 for a second load under one name (both generations; newer ones add a hint). */
const ALREADY_LOADED = /has already been loaded/;
/** `vllm/lora/worker_manager.py`: "LoRA rank R is greater than max_lora_rank M." */
const RANK_TOO_BIG = /LoRA rank (\d+) is greater than max_lora_rank (\d+)/;

/** What an adapter instance id may be: short, and free of the `@`/`.` the name is split on. */
const INSTANCE_ID = /^[A-Za-z0-9_-]{1,16}$/;

/** A fresh weight-sync instance id: 8 random hex digits (drawn once per engine). */
export function newAdapterInstance(): string {
  return randomBytes(4).toString('hex');
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
   * health-checks first when there are none), then makes it current. */
  sync(name: string, path: string, targets: () => Promise<Replica[]>): Promise<void> {
    return this.serialized(async () => {
      const version = this.createVersion(name, path);
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
   * Replicas out of rotation unload them when they are re-admitted. */
  release(name: string): Promise<void> {
    return this.serialized(async () => {
      const version = this.current.get(name);
      this.current.delete(name);
      const draining = [...this.versions].filter((v) => v.name === name && v !== version);
      if (version !== undefined) await this.retire(version);
      await Promise.all(draining.filter((v) => v.refs === 0).map((v) => this.dispose(v)));
    });
  }

  snapshot(): AdapterSnapshot[] {
    const names = new Set([...this.versions].map((v) => v.name));
    return [...names].map((name) => ({
      name,
      current: this.current.get(name)?.adapter,
      loaded: [...this.versions]
        .filter((v) => v.name === name)
        .map((v) => ({
          adapter: v.adapter,
          path: v.path,
          replicas: [...v.on],
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

  /** POST /v1/unload_lora_adapter; an adapter the replica does not hold (404/400) is fine. */
  async unloadFrom(replica: Replica, adapter: string): Promise<void> {
    const body: UnloadLoraAdapterRequest = { lora_name: adapter };
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

  private createVersion(name: string, path: string): AdapterVersion {
    const number = this.nextVersion.get(name) ?? 1;
    this.nextVersion.set(name, number + 1);
    const version: AdapterVersion = {
      name,
      version: number,
      adapter: versionedAdapterName(name, this.instance, number),
      path,
      on: new Set(),
      refs: 0,
      retired: false,
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
          await this.unloadFrom(replica, version.adapter);
        } catch {
          this.markStale(replica.url, version.adapter);
        }
        version.on.delete(replica.url);
      }),
    );
  }

  private markStale(replicaUrl: string, adapter: string): void {
    const stale = this.staleOn.get(replicaUrl) ?? new Set<string>();
    stale.add(adapter);
    this.staleOn.set(replicaUrl, stale);
  }

  /** POST /v1/load_lora_adapter for one version on one replica (see the file comment for how
   * failures are told apart). A name the replica already holds (a retry whose first reply was
   * lost: names carry this instance's id, so never another engine's) is unloaded and loaded
   * again: no request of ours uses a version before its sync completes. */
  private async loadAdapter(replica: Replica, version: AdapterVersion): Promise<void> {
    const body: LoadLoraAdapterRequest = { lora_name: version.adapter, lora_path: version.path };
    let reloaded = false;
    const interpret = async (reply: HttpReply): Promise<'send-again'> => {
      const info = readVllmError(reply);
      if (reply.status === 400 && ALREADY_LOADED.test(info.message) && !reloaded) {
        reloaded = true;
        await this.unloadFrom(replica, version.adapter);
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

  /** Bring a recovering replica up to date: unload what was released while it was out, load the
   * current version of every name. An adapter it rejects (e.g. its path vanished there) is
   * skipped on that replica (event `adapter:dropped`) so the replica still comes back;
   * connection loss / an unhealthy server throws and it stays out. */
  private async resync(replica: Replica): Promise<void> {
    // Whether it restarted (holding nothing) or was only unreachable (holding everything) is
    // unknown: superseded versions are unloaded, current ones loaded again.
    for (const version of this.versions) {
      if (!version.on.delete(replica.url) || this.current.get(version.name) === version) continue;
      this.markStale(replica.url, version.adapter);
    }
    for (const adapter of this.staleOn.get(replica.url) ?? []) {
      await this.unloadFrom(replica, adapter);
    }
    this.staleOn.delete(replica.url);
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

/** FastAPI's own 404 for a route that is not registered (`{"detail":"Not Found"}`), as opposed
 * to vLLM's NotFoundError envelope for a missing adapter. */
function isRouteMissing(reply: HttpReply): boolean {
  return isObject(reply.json) && reply.json['detail'] === 'Not Found';
}

/** A healthy server refused this adapter: name, path, the server's words, and a hint for the
 * failures Anneal can predict. */
function badAdapterError(
  context: ReturnType<VllmTransport['context']>,
  reply: HttpReply,
  version: AdapterVersion,
): EngineError {
  const info = readVllmError(reply);
  const rank = RANK_TOO_BIG.exec(info.message);
  const hint = rank
    ? ` (start vLLM with --max-lora-rank >= ${rank[1]} and set the endpoint's maxLoraRank, or ` +
      `train with lora.rank <= ${rank[2]})`
    : reply.status === 404
      ? ' (the path must exist on every replica: check the endpoint adapters.root mount)'
      : '';
  return new EngineError(
    ENGINE_ERROR_CODES.badAdapter,
    { ...context, status: reply.status, serverMessage: info.message, serverType: info.type },
    `adapter '${version.name}' (vLLM name '${version.adapter}', path ${version.path}) was ` +
      `rejected: ${describeHttpFailure(reply.status, info.type, info.message)}${hint}`,
  );
}
