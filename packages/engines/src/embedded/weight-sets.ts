// The weight sets of the embedded sampler server (sampler-server.ts), kept the way vLLM keeps LoRA
// adapters (vllm/lora/worker_manager.py@0030b9ff `LRUCacheWorkerLoRAManager`, as the vLLM fake in
// packages/engines/test/vllm/lora-cache.ts models it): a loaded name stays listed until it is
// unloaded, but at most `maxResident` sets are held in the ONNX sessions at once. Loading or
// using a set that is not resident evicts the least recently used idle one and reads its export
// again; a request waits while every resident set is in use (vLLM: requests of other adapters
// wait for a batch slot). Every read, eviction and the peak residency are counted, so a test can
// tell whether admission kept the runs within the capacity.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { EmbeddedInferenceEngine } from './onnx-sampler.ts';
import { ONNX_EXPORT_FORMAT } from './onnx-export.ts';

/** Why a load was refused: `missing` (no export at the path: vLLM's 404 "No adapter found"),
 * `invalid` (something else than an ONNX LM export), `loaded` (the name is listed already). */
export class WeightSetError extends Error {
  constructor(
    readonly kind: 'missing' | 'invalid' | 'loaded',
    message: string,
  ) {
    super(message);
  }
}

interface WeightSet {
  readonly path: string;
  /** Listed (its load has finished). */
  ready: boolean;
  resident: boolean;
  inFlight: number;
  /** Order of last use (higher: more recent). */
  used: number;
}

export interface WeightSetStats {
  maxResident: number;
  listed: number;
  resident: string[];
  /** Sets with completions in flight. */
  running: string[];
  /** Every read of an export, loads and re-reads after eviction. */
  reads: number;
  evictions: number;
  peakResident: number;
}

export class WeightSets {
  private readonly sets = new Map<string, WeightSet>();
  private readonly waiters: Array<() => void> = [];
  private clock = 0;
  private reads = 0;
  private evictions = 0;
  private peakResident = 0;
  /** Residency changes (reads and evictions) one at a time. */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly engine: Pick<EmbeddedInferenceEngine, 'loadWeights' | 'releaseWeights'>,
    readonly maxResident: number,
  ) {
    if (!Number.isInteger(maxResident) || maxResident < 1) {
      throw new RangeError(`maxLoras must be an integer >= 1, got ${maxResident}`);
    }
  }

  /** Listed names and their export paths, in load order. */
  listed(): Array<[string, string]> {
    return [...this.sets].filter(([, set]) => set.ready).map(([name, set]) => [name, set.path]);
  }

  has(name: string): boolean {
    return this.sets.get(name)?.ready === true;
  }

  pathOf(name: string): string | undefined {
    const set = this.sets.get(name);
    return set?.ready ? set.path : undefined;
  }

  /** `/v1/load_lora_adapter`: checks the export, makes it resident and lists the name. */
  async load(name: string, exportPath: string): Promise<void> {
    const taken = () => {
      if (this.sets.has(name)) {
        throw new WeightSetError('loaded', `The lora adapter '${name}' has already been loaded.`);
      }
    };
    taken();
    await checkExport(exportPath);
    taken(); // another load of the name may have started while this one read the manifest
    const set: WeightSet = {
      path: exportPath,
      ready: false,
      resident: false,
      inFlight: 0,
      used: 0,
    };
    this.sets.set(name, set);
    try {
      await this.exclusive(() => this.makeResident(name, set));
    } catch (error) {
      this.sets.delete(name);
      throw error;
    }
    set.ready = true;
  }

  /** `/v1/unload_lora_adapter`: false when the name is not listed. A request already running on
   * the set finishes on it (its ONNX session is released once that request ends). */
  async unload(name: string): Promise<boolean> {
    const set = this.sets.get(name);
    if (set?.ready !== true) return false;
    this.sets.delete(name);
    await this.exclusive(() => this.evict(name, set));
    return true;
  }

  /** A completion for `name` (listed) holds its set resident until `release` is called. */
  async acquire(name: string): Promise<() => void> {
    const set = this.sets.get(name);
    if (set?.ready !== true) {
      throw new WeightSetError('missing', `The model \`${name}\` does not exist.`);
    }
    set.inFlight += 1;
    try {
      if (!set.resident) await this.exclusive(() => this.makeResident(name, set));
    } catch (error) {
      this.done(set);
      throw error;
    }
    set.used = ++this.clock;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.done(set);
    };
  }

  stats(): WeightSetStats {
    const resident = [...this.sets].filter(([, s]) => s.resident).map(([name]) => name);
    const listed = [...this.sets.values()].filter((s) => s.ready).length;
    const running = [...this.sets].filter(([, s]) => s.inFlight > 0).map(([name]) => name);
    return {
      maxResident: this.maxResident,
      listed,
      resident,
      running,
      reads: this.reads,
      evictions: this.evictions,
      peakResident: this.peakResident,
    };
  }

  private done(set: WeightSet): void {
    set.inFlight -= 1;
    this.waiters.splice(0).forEach((wake) => wake());
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.chain.then(work, work);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Evicts the least recently used idle set until there is room (waiting for a request to end
   * while every resident set is in use), then reads `set`. */
  private async makeResident(name: string, set: WeightSet): Promise<void> {
    if (set.resident) return;
    for (;;) {
      if (this.sets.get(name) !== set) {
        throw new WeightSetError('missing', `The model \`${name}\` was unloaded.`);
      }
      const resident = [...this.sets].filter(([, s]) => s.resident);
      if (resident.length < this.maxResident) break;
      const idle = resident
        .filter(([, s]) => s.inFlight === 0)
        .sort(([, a], [, b]) => a.used - b.used)[0];
      if (idle !== undefined) {
        await this.evict(idle[0], idle[1]);
        this.evictions += 1;
        continue;
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    await this.engine.loadWeights({ name, path: set.path });
    set.resident = true;
    set.used = ++this.clock;
    this.reads += 1;
    const count = [...this.sets.values()].filter((s) => s.resident).length;
    this.peakResident = Math.max(this.peakResident, count);
  }

  private async evict(name: string, set: WeightSet): Promise<void> {
    if (!set.resident) return;
    set.resident = false;
    await this.engine.releaseWeights(name);
  }
}

/** What vLLM's loader checks first, for ONNX exports: the manifest exists and names a decoder. */
async function checkExport(dir: string): Promise<void> {
  const manifest = path.join(dir, 'export.json');
  let text: string;
  try {
    text = await readFile(manifest, 'utf8');
  } catch {
    throw new WeightSetError('missing', `No adapter found for ${dir}`);
  }
  let parsed: { format?: unknown; decoder?: unknown };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    throw new WeightSetError('invalid', `${manifest} is not JSON`);
  }
  if (parsed.format !== ONNX_EXPORT_FORMAT || typeof parsed.decoder !== 'string') {
    throw new WeightSetError(
      'invalid',
      `${dir} is not an ONNX LM export (${ONNX_EXPORT_FORMAT} with a decoder): this server loads ` +
        "the embedded trainer's sampler exports only",
    );
  }
}
