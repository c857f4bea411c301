// The fake vLLM's LoRA routes and adapter state (fake-server.ts): the serving layer's names and
// the engine's cache, per server generation.
// - Names: `vllm/entrypoints/openai/serving_models.py` (v0.11 line, read @075e9ba8) keeps a list
//   of `LoRARequest`s; unload only drops the name (the engine's cache is not told).
//   `vllm/entrypoints/openai/models/serving.py` (main, read @00153c8b) `unload_lora_adapter`
//   calls the engine's `remove_lora` first and, when it answers false (the LRU already evicted
//   the adapter), answers 500 "Failed to remove lora adapter '<name>' from the engine." and the
//   name stays listed; `load_lora_adapter` with `load_inplace` reuses the name's int id.
// - Load failures: a second load of a name is a 400 "has already been loaded." (main adds the
//   `load_inplace` hint); "No adapter found" a 404; other engine failures a 400 (v0.11) or a
//   500 InternalServerError (main); `vllm/lora/worker_manager.py` `_load_adapter` (a missing
//   adapter_config.json is "No adapter found for <path>"; "LoRA rank R is greater than
//   max_lora_rank M.").
// - The engine's cache (lora-cache.ts) when `maxLoras` is set; otherwise unbounded.
import { readFile, stat } from 'node:fs/promises';
import { errorBody } from './fixtures.ts';
import type { ServerShape, VllmGeneration } from './fixtures.ts';
import { FakeLoraCache } from './lora-cache.ts';
import {
  QWEN3_LORA_MODULES,
  adapterModules,
  readSafetensorsHeader,
} from '../../src/adapters/peft-modules.ts';

export type LoraReply = { status: number; json?: unknown; text?: string };

export interface LoraRouteOptions {
  shape: ServerShape;
  generation: VllmGeneration;
  enableLora: boolean;
  maxLoraRank: number;
  missingPaths: readonly string[];
  checkAdapterFiles: boolean;
  /** `--max-loras`; undefined: no cache modelled (every adapter stays resident). */
  maxLoras?: number;
  /** `--max-cpu-loras` (default `maxLoras`, as `vllm/config/lora.py`). */
  maxCpuLoras?: number;
  /** ms each read of an adapter from disk takes (default instant): vLLM reads an adapter on the
   * engine's own step (`add_adapter` in the batch's model step, lora-cache.ts), so the batch
   * stalls for it — the state's `onAdapterRead` is told. */
  adapterReadMs?: number;
}

export class FakeLoraState {
  /** Names the server lists (GET /v1/models): name -> path. */
  readonly adapters = new Map<string, string>();
  /** Adapter name -> every path loaded under it, in order (unloads do not clear it). */
  readonly loadHistory = new Map<string, string[]>();
  /** Loads of a name already loaded before with another path (fake-server.ts file comment). */
  readonly staleCacheLoads: Array<{ name: string; cachedPath: string; path: string }> = [];
  /** Per adapter path read from disk: the modules its tensors adapt, as the loader saw them. */
  readonly adapterTensorModules = new Map<string, string[]>();
  /** Most names listed at once (benchmarks may reset it). */
  peakListed = 0;
  /** The engine's cache (undefined without `maxLoras`). */
  readonly cache: FakeLoraCache | undefined;
  /** Name -> its int id (`lora_int_id`). */
  private readonly ids = new Map<string, number>();
  private nextId = 1;
  /** Paths that existed on this machine when loaded: a re-read of one that is gone fails. */
  private readonly realPaths = new Set<string>();

  constructor(
    /** The server's own options object: a test changes it (missingPaths) while it runs. */
    private readonly options: LoraRouteOptions,
    private readonly onAdapterRead?: (ms: number) => void,
  ) {
    const { maxLoras, maxCpuLoras } = options;
    this.cache =
      maxLoras === undefined
        ? undefined
        : new FakeLoraCache({ maxLoras, maxCpuLoras: maxCpuLoras ?? maxLoras }, (path) =>
            this.timedRead(path),
          );
  }

  /** POST /v1/load_lora_adapter, one at a time per name: vLLM checks and adds a name under
   * `async with self.lora_resolver_lock[lora_name]` (`load_lora_adapter`, serving_models.py at
   * v0.11 and models/serving.py on main), so a second concurrent load of a name waits and is
   * then the 400 "has already been loaded." — never a second success. */
  load(body: unknown): Promise<LoraReply> {
    const name = (body as { lora_name?: unknown } | null)?.lora_name;
    const key = typeof name === 'string' ? name : '';
    const previous = this.loading.get(key) ?? Promise.resolve();
    const reply = previous.then(() => this.loadNow(body));
    const settled = reply.then(
      () => undefined,
      () => undefined,
    );
    this.loading.set(key, settled);
    void settled.then(() => {
      if (this.loading.get(key) === settled) this.loading.delete(key);
    });
    return reply;
  }

  /** Per name, the last load's end (the resolver lock's queue). */
  private readonly loading = new Map<string, Promise<void>>();

  private async loadNow(body: unknown): Promise<LoraReply> {
    const { generation } = this.options;
    const fields = (body ?? {}) as Record<string, unknown>;
    const { lora_name: name, lora_path: path, load_inplace: inplace } = fields;
    if (typeof name !== 'string' || typeof path !== 'string' || !name || !path) {
      const message = "Both 'lora_name' and 'lora_path' must be provided.";
      return this.error(400, 'InvalidUserInput', message);
    }
    const inplaceHonoured = generation === 'current' && inplace === true;
    if (this.adapters.has(name) && !inplaceHonoured) {
      const message =
        generation === 'current'
          ? `The lora adapter '${name}' has already been loaded. If you want to load the ` +
            "adapter in place, set 'load_inplace' to True."
          : `The lora adapter '${name}' has already been loaded.`;
      return this.error(400, 'InvalidUserInput', message);
    }
    if (!this.options.enableLora) {
      const message = 'LoRA is not enabled. Use --enable-lora to enable LoRA.';
      return this.engineFailure(message);
    }
    const id = (inplaceHonoured ? this.ids.get(name) : undefined) ?? this.nextId++;
    try {
      if (this.cache) await this.cache.add(id, path, { reload: inplaceHonoured });
      else await this.timedRead(path);
    } catch (error) {
      const message = (error as Error).message;
      if (message.startsWith('No adapter found')) {
        return this.error(404, 'NotFoundError', `Loading lora ${name} failed: ${message}`);
      }
      return this.engineFailure(message);
    }
    this.ids.set(name, id);
    this.adapters.set(name, path);
    this.peakListed = Math.max(this.peakListed, this.adapters.size);
    this.recordLoad(name, path);
    return { status: 200, text: `Success: LoRA adapter '${name}' added successfully.` };
  }

  /** POST /v1/unload_lora_adapter: 404 for a name it does not list; on main the engine must
   * still hold the adapter, else 500 and the name stays. */
  unload(body: unknown): LoraReply {
    const name = (body as Record<string, unknown> | undefined)?.['lora_name'];
    if (typeof name !== 'string' || !this.adapters.has(name)) {
      return this.error(
        404,
        'NotFoundError',
        `The lora adapter '${String(name)}' cannot be found.`,
      );
    }
    const id = this.ids.get(name) as number;
    if (this.options.generation === 'current' && this.cache && !this.cache.remove(id)) {
      const message = `Failed to remove lora adapter '${name}' from the engine.`;
      return this.error(500, 'InternalServerError', message);
    }
    this.adapters.delete(name);
    this.ids.delete(name);
    return { status: 200, text: `Success: LoRA adapter '${name}' removed successfully.` };
  }

  /** A completion for adapter `name` enters the batch (its slot released by the result), or the
   * engine's failure when an evicted adapter cannot be read again. */
  async run(name: string): Promise<(() => void) | { failure: string }> {
    const path = this.adapters.get(name);
    const id = this.ids.get(name);
    if (!this.cache || path === undefined || id === undefined) return () => undefined;
    try {
      return await this.cache.run(id, path);
    } catch (error) {
      return { failure: `Loading lora ${name} failed: ${(error as Error).message}` };
    }
  }

  /** The int id of a listed name (tests). */
  idOf(name: string): number | undefined {
    return this.ids.get(name);
  }

  private recordLoad(name: string, path: string): void {
    const history = this.loadHistory.get(name) ?? [];
    const cachedPath = history.at(-1);
    if (cachedPath !== undefined && cachedPath !== path) {
      this.staleCacheLoads.push({ name, cachedPath, path });
    }
    history.push(path);
    this.loadHistory.set(name, history);
  }

  /** `readAdapter` taking `adapterReadMs`, the engine's batch stalled meanwhile. */
  private async timedRead(path: string): Promise<void> {
    await this.readAdapter(path);
    const ms = this.options.adapterReadMs ?? 0;
    if (ms <= 0) return;
    this.onAdapterRead?.(ms);
    await new Promise((resolve) => setTimeout(resolve, ms));
  }

  /** Reads the adapter at `path` like vLLM (throws its message). Paths that exist on this machine
   * are read for real; others load unless listed in `missingPaths` or they existed at an earlier
   * read (the files were removed since). */
  private async readAdapter(path: string): Promise<void> {
    const missing = `No adapter found for ${path}`;
    if (this.options.missingPaths.includes(path)) throw new Error(missing);
    const onDisk = await stat(path).then(
      (info) => info.isDirectory(),
      () => undefined,
    );
    if (onDisk === undefined) {
      if (this.realPaths.has(path)) throw new Error(missing);
      return; // a path only the test imagines
    }
    this.realPaths.add(path);
    if (!this.options.checkAdapterFiles) return;
    let config: { r?: unknown };
    try {
      config = JSON.parse(await readFile(`${path}/adapter_config.json`, 'utf8')) as { r?: unknown };
    } catch {
      throw new Error(missing); // vLLM reads a missing adapter_config.json as "No adapter found"
    }
    const rank = Number(config.r);
    if (rank > this.options.maxLoraRank) {
      throw new Error(
        `LoRA rank ${rank} is greater than max_lora_rank ${this.options.maxLoraRank}.`,
      );
    }
    await this.checkTensorModules(path);
  }

  /** vllm/lora/lora_model.py@532cc258 `check_unexpected_modules`: the safetensors keys, not
   * target_modules, decide; each module's leaf (`experts` for an expert) must be adaptable. */
  private async checkTensorModules(path: string): Promise<void> {
    const file = `${path}/adapter_model.safetensors`;
    const present = await stat(file).then(
      () => true,
      () => false,
    );
    if (!present) return;
    // stand-in files of older tests (not safetensors at all) are not read
    const header = await readSafetensorsHeader(file).catch(() => undefined);
    if (header === undefined) return;
    const found = adapterModules(header.keys());
    if (found.unservable.length > 0) {
      throw new Error(
        `While loading ${path}, expected target modules in ${JSON.stringify(QWEN3_LORA_MODULES)} ` +
          `but received ${JSON.stringify(found.unservable)}. Please verify that the loaded LoRA module is correct`,
      );
    }
    this.adapterTensorModules.set(path, found.modules);
  }

  private engineFailure(message: string): LoraReply {
    return this.options.generation === 'current'
      ? this.error(500, 'InternalServerError', message)
      : this.error(400, 'BadRequestError', message);
  }

  private error(status: number, type: string, message: string): LoraReply {
    return { status, json: errorBody(this.options.shape, status, type, message) };
  }
}
