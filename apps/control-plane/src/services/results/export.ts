// Taking a checkpoint out (GET /v1/runs/{id}/checkpoints/{step}/export, `anneal runs export`):
// its sampler export as the files people deploy plus a manifest, streamed as a tar.
// - Embedded trainer: read from the shared artifact root (ANNEAL_ARTIFACT_DIR), where it writes
//   its exports under `<root>/engines/<endpoint>/` (the ONNX model the embedded sampler loads).
// - SkyRL / hosted Tinker: the export's archive downloaded from the trainer's archive route and
//   unpacked (@anneal/engines/archive), a PEFT LoRA adapter (adapter_config.json +
//   adapter_model.safetensors), into a temporary directory removed once the tar is sent. Its
//   tensors must adapt only modules the base model can (a hosted archive with Tinker's
//   `model.unembed_tokens`, or SkyRL JAX's MoE experts scaled as vLLM and PEFT would not, is
//   refused), and its adapter_config.json is rewritten to state them (`target_modules` from
//   the keys; SkyRL JAX writes null, which PEFT reads as q_proj, v_proj only).
// Tenant-scoped like GET /v1/runs/{id}.
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fetchSamplerWeights } from '@anneal/engines/archive';
import { EXPORT_MANIFEST_FILE, type ExportManifest, type RunResource } from '@anneal/protocol';
import { engineArtifactDir, getCheckpointEntry, getRun } from '@anneal/store';
import type { AppContext } from '../../context.ts';
import { AnnealError, runNotFound } from '../../errors.ts';
import { canonicalJson } from '../runs/submit.ts';
import type { TarEntry } from '../../infra/tar-stream.ts';

/** Fork chains are short (the worker's model-ref.ts caps them at 16 runs too). */
const MAX_CHAIN = 16;

export interface CheckpointExport {
  manifest: ExportManifest;
  entries: TarEntry[];
  /** Removes what the export downloaded (call once the tar is sent). */
  cleanup(): Promise<void>;
}

type TrainerEntry = AppContext['operator']['trainers'][string];

interface Weights {
  format: ExportManifest['weights']['format'];
  entries: TarEntry[];
  cleanup(): Promise<void>;
}

/** The directory of an embedded trainer's sampler export `tinker://<model_id>/<name>` (the
 * embedded trainer's layout, @anneal/engines tinker-paths.ts): null for any other path. */
function embeddedExportDir(root: string, trainer: string, samplerPath: string): string | null {
  const match = /^tinker:\/\/([a-zA-Z0-9_-]+)\/([a-zA-Z0-9_-]+)$/.exec(samplerPath);
  if (!match) return null;
  return path.join(engineArtifactDir(root, trainer), match[1]!, 'sampler_weights', match[2]!);
}

/** The registered base model the run's weights descend from (following forks to a base). */
async function baseModelOf(
  ctx: AppContext,
  run: RunResource,
): Promise<ExportManifest['baseModel']> {
  let ref = run.spec.model;
  for (let depth = 0; depth < MAX_CHAIN && ref?.checkpoint !== undefined; depth++) {
    const parent = await getRun(ctx.store, ref.checkpoint.run, { tenant: run.tenant });
    if (!parent) throw new Error(`run ${run.id}: ancestor run ${ref.checkpoint.run} is gone`);
    ref = parent.spec.model;
  }
  const name = ref?.base ?? ctx.operator.defaults.baseModel;
  const entry = name === undefined ? undefined : ctx.operator.baseModels[name];
  if (name === undefined || !entry) {
    throw new Error(`run ${run.id}: its base model ${name ?? '(none)'} is not registered`);
  }
  return { name, model: entry.model };
}

async function filesOf(dir: string, what: string): Promise<TarEntry[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).sort();
  } catch {
    // The detail reaches any viewer of the tenant: it says what is wrong, never where the
    // server keeps its files (docs/security.md).
    throw new AnnealError(
      'ANNEAL_ERR_EXPORT_UNAVAILABLE',
      `${what}: its files are not under this control plane's ANNEAL_ARTIFACT_DIR`,
    );
  }
  const entries: TarEntry[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    const info = await stat(file);
    // a `.tmp` is a write in progress (files are renamed into place when complete)
    if (!info.isFile() || name.endsWith('.tmp')) continue;
    entries.push({ name, size: info.size, mtime: info.mtime, source: { file } });
  }
  return entries;
}

async function embeddedWeights(
  ctx: AppContext,
  trainer: string,
  samplerPath: string,
  what: string,
): Promise<Weights> {
  const dir = embeddedExportDir(ctx.artifactDir, trainer, samplerPath);
  if (dir === null) {
    throw new AnnealError(
      'ANNEAL_ERR_EXPORT_UNAVAILABLE',
      `${what}: its sampler export is not one this control plane can read`,
    );
  }
  const entries = await filesOf(dir, what);
  if (!entries.some((f) => f.name === 'model.onnx')) {
    throw new AnnealError('ANNEAL_ERR_EXPORT_UNAVAILABLE', `${what}: its export has no model.onnx`);
  }
  return { format: 'onnx', entries, cleanup: async () => undefined };
}

/** The export's archive from a Tinker-compatible trainer, unpacked: a LoRA adapter. */
async function downloadedWeights(
  ctx: AppContext,
  trainer: string,
  endpoint: TrainerEntry,
  samplerPath: string,
  what: string,
): Promise<Weights> {
  if (endpoint.type !== 'tinker') {
    throw new AnnealError(
      'ANNEAL_ERR_EXPORT_UNAVAILABLE',
      `${what}: trainer type ${endpoint.type}`,
    );
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'anneal-export-'));
  const cleanup = () => rm(dir, { recursive: true, force: true });
  try {
    const apiKey = ctx.trainerApiKeys[trainer];
    const prepared = await fetchSamplerWeights(
      { name: trainer, baseUrl: endpoint.url, ...(apiKey !== undefined && { apiKey }) },
      samplerPath,
      dir,
      {
        server: endpoint.backend?.startsWith('skyrl') ? 'skyrl' : 'tinker',
        ...(endpoint.backend !== undefined && { backend: endpoint.backend }),
      },
    );
    if (prepared.kind !== 'lora') {
      throw new AnnealError(
        'ANNEAL_ERR_EXPORT_UNAVAILABLE',
        `${what}: the trainer's archive of ${samplerPath} is not a LoRA adapter (${prepared.kind})`,
      );
    }
    // hosted Tinker's completion marker is not part of the adapter (the SDK leaves it out of
    // its Hub uploads too)
    const entries = (await filesOf(prepared.dir, what)).filter(
      (f) => f.name !== 'checkpoint_complete',
    );
    return { format: 'peft-lora', entries, cleanup };
  } catch (error) {
    await cleanup();
    if (error instanceof AnnealError) throw error;
    throw new AnnealError(
      'ANNEAL_ERR_EXPORT_UNAVAILABLE',
      `${what}: downloading ${samplerPath} from trainer '${trainer}' failed: ${(error as Error).message}`,
    );
  }
}

export async function checkpointExport(
  ctx: AppContext,
  tenant: string,
  runId: string,
  step: number,
  now: Date = new Date(),
): Promise<CheckpointExport> {
  const run = await getRun(ctx.store, runId, { tenant });
  if (!run) throw runNotFound(runId);
  const entry = await getCheckpointEntry(ctx.store, runId, step);
  if (!entry || entry.status === 'deleted') {
    throw new AnnealError(
      'ANNEAL_ERR_CHECKPOINT_NOT_FOUND',
      entry
        ? `run '${runId}' deleted its checkpoint at step ${step} (checkpoint retention)`
        : `run '${runId}' has no checkpoint at step ${step}`,
    );
  }
  const what = `checkpoint ${step} of run '${runId}'`;
  const trainer = run.spec.endpoints.trainer;
  const endpoint = trainer === undefined ? undefined : ctx.operator.trainers[trainer];
  const samplerPath = entry.samplerPath;
  if (trainer === undefined || endpoint === undefined || samplerPath === undefined) {
    throw new AnnealError(
      'ANNEAL_ERR_EXPORT_UNAVAILABLE',
      `${what}: ${samplerPath === undefined ? 'has no sampler export' : `its trainer '${trainer ?? '?'}' is not in this operator config`}`,
    );
  }
  const weights =
    endpoint.type === 'embedded'
      ? await embeddedWeights(ctx, trainer, samplerPath, what)
      : await downloadedWeights(ctx, trainer, endpoint, samplerPath, what);
  const manifest: ExportManifest = {
    format: 'anneal-export/v1',
    run: { id: run.id, kind: run.kind, ...(run.name !== undefined && { name: run.name }) },
    step,
    checkpointAt: entry.at,
    exportedAt: now.toISOString(),
    baseModel: await baseModelOf(ctx, run),
    ...(run.parent && { parent: run.parent }),
    specSha256: createHash('sha256').update(canonicalJson(run.spec)).digest('hex'),
    metrics: entry.metrics,
    weights: {
      format: weights.format,
      files: weights.entries.map((f) => f.name),
      trainer,
      samplerPath,
    },
  };
  const bytes = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
  const head: TarEntry = {
    name: EXPORT_MANIFEST_FILE,
    size: bytes.length,
    mtime: now,
    source: bytes,
  };
  return { manifest, entries: [head, ...weights.entries], cleanup: weights.cleanup };
}
