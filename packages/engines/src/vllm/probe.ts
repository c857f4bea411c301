// A check of a vLLM endpoint, for operators (`anneal endpoints check`) before runs use it: per
// replica the server version, what it serves (and `max_model_len`), whether `load_inplace`
// exists, and runtime LoRA exercised as a run uses it (lora-exercise.ts: a scratch adapter is
// written, loaded under a scratch name, sampled from and unloaded; nothing else is changed);
// and whether the adapter directory is usable from this machine.
import { constants } from 'node:fs';
import { access, mkdtemp, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { EngineError } from '../http/errors.ts';
import { isObject, sendJson } from '../http/request.ts';
import type { HttpReply } from '../http/request.ts';
import { realTimers } from '../http/timing.ts';
import type { Timers } from '../http/timing.ts';
import { readVllmError } from './errors.ts';
import { exerciseLora, writeScratchAdapter } from './lora-exercise.ts';
import type { LoraExercise, ScratchAdapter, ScratchKind } from './lora-exercise.ts';

export interface VllmProbeConfig {
  /** The operator-registered endpoint name. */
  name: string;
  replicas: readonly string[];
  /** The served model expected on every replica (`--served-model-name`). */
  model?: string;
  apiKey?: string;
  /** Where unpacked adapters go (the endpoint's `adapters.root`), checked on this machine. */
  adapterRoot?: string;
  /** Per-request timeout (default 5 s). */
  timeoutMs?: number;
  /** The scratch adapter to exercise runtime loading with: a PEFT LoRA adapter (default, vLLM)
   * or an ONNX export (the embedded sampler server, `server: anneal-embedded`). */
  scratch?: ScratchKind;
  /** Timeout of the scratch adapter's load and sample (default 60 s). */
  loraTimeoutMs?: number;
  timers?: Timers;
}

export interface VllmServedModel {
  id: string;
  /** From the base model card (absent on servers older than ~v0.6). */
  maxModelLen?: number;
  /** Set on LoRA adapter cards: the base model. */
  parent?: string;
  /** `owned_by`: `vllm` on vLLM's cards, `anneal-embedded` on the embedded sampler server's. */
  ownedBy?: string;
}

export interface VllmReplicaProbe {
  url: string;
  /** GET /health answered 200. */
  healthy: boolean;
  /** GET /version, when the server has the route. */
  version?: string;
  /** Whether `/v1/load_lora_adapter` takes `load_inplace` (vLLM PR #31326, merged 2026-01-19):
   * true from v0.15.0, false up to v0.13.x, undefined for v0.14.x, dev builds and unknown. */
  loadInplace?: boolean;
  models: VllmServedModel[];
  /** `model` is among `models` (undefined when no model was given or /v1/models failed). */
  servesModel?: boolean;
  /** A scratch adapter loaded, sampled and unloaded (`--enable-lora` +
   * VLLM_ALLOW_RUNTIME_LORA_UPDATING=True, and the adapter path readable by the server). */
  loraEnabled?: boolean;
  /** Each step of that exercise (absent when the replica was unreachable or refused the key). */
  lora?: LoraExercise;
  /** `--max-loras`: adapters one batch can hold, from the `max_lora` label of
   * `vllm:lora_requests_info` on GET /metrics (vllm/v1/metrics/loggers.py; absent when LoRA is
   * off or the server has no metrics). `--max-cpu-loras` is not reported. */
  maxLoras?: number;
  /** What failed, one line each. */
  problems: string[];
}

export interface AdapterDirProbe {
  path: string;
  exists: boolean;
  readable: boolean;
  /** A directory could be created and removed in it (archives are unpacked there). */
  writable: boolean;
  problem?: string;
}

export interface VllmEndpointProbe {
  endpoint: string;
  replicas: VllmReplicaProbe[];
  adapterDir?: AdapterDirProbe;
  /** True when every replica is healthy, serves the model and has LoRA on, and the adapter
   * directory (when given) is readable and writable. */
  ok: boolean;
}

/** `0.11.2`, `v0.15.1`, `0.14.0rc1.dev5+g1234` -> whether it has `load_inplace`. */
export function loadInplaceFromVersion(version: string): boolean | undefined {
  const match = /^v?(\d+)\.(\d+)\.(\d+)(.*)$/.exec(version.trim());
  if (!match) return undefined;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  const rest = match[4] ?? '';
  if (major > 0) return true;
  if (minor >= 15) return true;
  if (minor <= 13 && !/dev/.test(rest)) return false;
  if (minor <= 12) return false;
  return undefined;
}

export async function probeVllmEndpoint(config: VllmProbeConfig): Promise<VllmEndpointProbe> {
  let scratch: ScratchAdapter | string;
  try {
    scratch = await writeScratchAdapter(config.adapterRoot, config.model, config.scratch);
  } catch (error) {
    scratch = `cannot write a scratch adapter: ${error instanceof Error ? error.message : String(error)}`;
  }
  const replicas = await Promise.all(
    config.replicas.map((url) => probeReplica(url.replace(/\/+$/, ''), config, scratch)),
  );
  if (typeof scratch !== 'string') await scratch.remove();
  const adapterDir =
    config.adapterRoot === undefined ? undefined : await probeAdapterDir(config.adapterRoot);
  const ok =
    replicas.every(
      (r) =>
        r.healthy && r.servesModel !== false && r.loraEnabled === true && r.problems.length === 0,
    ) &&
    (adapterDir === undefined || (adapterDir.readable && adapterDir.writable));
  return { endpoint: config.name, replicas, ...(adapterDir && { adapterDir }), ok };
}

async function probeReplica(
  url: string,
  config: VllmProbeConfig,
  scratch: ScratchAdapter | string,
): Promise<VllmReplicaProbe> {
  const problems: string[] = [];
  const exchange = (method: 'GET' | 'POST', route: string, body: unknown, timeoutMs: number) =>
    sendJson(
      { engine: 'vLLM', endpoint: config.name, url, route },
      {
        method,
        body,
        headers: config.apiKey ? { authorization: `Bearer ${config.apiKey}` } : {},
        timeoutMs,
        timers: config.timers ?? realTimers,
      },
    );
  const call = async (
    method: 'GET' | 'POST',
    route: string,
    body?: unknown,
  ): Promise<HttpReply | undefined> => {
    try {
      return await exchange(method, route, body, config.timeoutMs ?? 5_000);
    } catch (error) {
      problems.push(error instanceof EngineError ? error.message : String(error));
      return undefined;
    }
  };
  const probe: VllmReplicaProbe = { url, healthy: false, models: [], problems };
  const health = await call('GET', '/health');
  if (health === undefined) return probe; // unreachable: nothing else will answer
  probe.healthy = health.status === 200;
  if (!probe.healthy) problems.push(`/health answered ${health.status}`);

  const version = await call('GET', '/version');
  if (
    version?.status === 200 &&
    isObject(version.json) &&
    typeof version.json['version'] === 'string'
  ) {
    probe.version = version.json['version'];
    const inplace = loadInplaceFromVersion(probe.version);
    if (inplace !== undefined) probe.loadInplace = inplace;
  }

  const models = await call('GET', '/v1/models');
  if (models?.status === 200) {
    probe.models = readModels(models.json);
    if (config.model !== undefined) {
      probe.servesModel = probe.models.some((m) => m.id === config.model && m.parent === undefined);
      if (!probe.servesModel) {
        const ids = probe.models.map((m) => m.id).join(', ') || 'none';
        problems.push(`does not serve '${config.model}' (serves: ${ids})`);
      }
    }
  } else if (models !== undefined) {
    problems.push(`/v1/models answered ${models.status}: ${readVllmError(models).message}`);
  }

  try {
    const metrics = await exchange('GET', '/metrics', undefined, config.timeoutMs ?? 5_000);
    const maxLoras = metrics.status === 200 ? maxLorasOf(metrics.text) : undefined;
    if (maxLoras !== undefined) probe.maxLoras = maxLoras;
  } catch {
    // No metrics: the capacity stays unknown (the check says so).
  }

  if (typeof scratch === 'string') {
    probe.loraEnabled = false;
    probe.lora = { load: { ok: false, detail: scratch } };
    return probe;
  }
  const lora = await exerciseLora(async (route, body) => {
    try {
      return await exchange('POST', route, body, config.loraTimeoutMs ?? 60_000);
    } catch (error) {
      return error instanceof EngineError ? error.message : String(error);
    }
  }, scratch);
  const refused = [lora.load, lora.sample, lora.unload].some((step) =>
    /^\D*401\b/.test(step?.detail ?? ''),
  );
  if (refused) {
    problems.push('the API key was refused (401)');
    return probe;
  }
  probe.lora = lora;
  probe.loraEnabled = [lora.load, lora.sample, lora.unload].every((step) => step?.ok === true);
  return probe;
}

/** The `max_lora` label of `vllm:lora_requests_info` in a Prometheus text exposition. */
export function maxLorasOf(text: string): number | undefined {
  const line = /^vllm:lora_requests_info\{([^}]*)\}/m.exec(text);
  const value = line && /(?:^|,)\s*max_lora="(\d+)"/.exec(line[1] ?? '');
  return value ? Number(value[1]) : undefined;
}

function readModels(json: unknown): VllmServedModel[] {
  const cards = isObject(json) && Array.isArray(json['data']) ? json['data'] : [];
  return cards.filter(isObject).flatMap((card) => {
    if (typeof card['id'] !== 'string') return [];
    const length = card['max_model_len'];
    const parent = card['parent'];
    const owner = card['owned_by'];
    return [
      {
        id: card['id'],
        ...(Number.isSafeInteger(length) && { maxModelLen: length as number }),
        ...(typeof parent === 'string' && { parent }),
        ...(typeof owner === 'string' && { ownedBy: owner }),
      },
    ];
  });
}

async function probeAdapterDir(path: string): Promise<AdapterDirProbe> {
  const result: AdapterDirProbe = { path, exists: false, readable: false, writable: false };
  try {
    result.exists = (await stat(path)).isDirectory();
  } catch {
    return { ...result, problem: `${path} does not exist on this machine` };
  }
  if (!result.exists) return { ...result, problem: `${path} is not a directory` };
  result.readable = await access(path, constants.R_OK | constants.X_OK).then(
    () => true,
    () => false,
  );
  try {
    const made = await mkdtemp(join(path, '.anneal-probe-'));
    await rm(made, { recursive: true, force: true });
    result.writable = true;
  } catch (error) {
    result.problem = `cannot create directories in ${path}: ${
      error instanceof Error ? error.message : String(error)
    }`;
  }
  if (!result.readable) result.problem ??= `${path} is not readable`;
  return result;
}
