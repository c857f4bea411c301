// Taking a checkpoint out (GET /v1/runs/{id}/checkpoints/{step}/export, `anneal runs export`):
// its sampler export as the files people deploy plus a manifest, streamed as a tar. The files
// are read from the shared artifact root (ANNEAL_ARTIFACT_DIR): an embedded trainer writes its
// exports under `<root>/engines/<endpoint>/` (the ONNX model the embedded sampler loads).
// Tenant-scoped like GET /v1/runs/{id}.
import { createHash } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  EXPORT_MANIFEST_FILE,
  type ExportManifest,
  type ModelRef,
  type RunResource,
} from '@anneal/protocol';
import { engineArtifactDir, getRun, listCheckpoints } from '@anneal/store';
import type { AppContext } from '../context.ts';
import { AnnealError, runNotFound } from '../errors.ts';
import { canonicalJson } from './submit.ts';
import type { TarEntry } from './tar-stream.ts';

/** Fork chains are short (the worker's model-ref.ts caps them at 16 runs too). */
const MAX_CHAIN = 16;

export interface CheckpointExport {
  manifest: ExportManifest;
  entries: TarEntry[];
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
  let ref = (run.spec as { model?: ModelRef }).model;
  for (let depth = 0; depth < MAX_CHAIN && ref?.checkpoint !== undefined; depth++) {
    const parent = await getRun(ctx.store, ref.checkpoint.run, { tenant: run.tenant });
    if (!parent) throw new Error(`run ${run.id}: ancestor run ${ref.checkpoint.run} is gone`);
    ref = (parent.spec as { model?: ModelRef }).model;
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
    throw new AnnealError(
      'ANNEAL_ERR_EXPORT_UNAVAILABLE',
      `${what}: its files are not under this control plane's ANNEAL_ARTIFACT_DIR (${dir})`,
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

export async function checkpointExport(
  ctx: AppContext,
  tenant: string,
  runId: string,
  step: number,
  now: Date = new Date(),
): Promise<CheckpointExport> {
  const run = await getRun(ctx.store, runId, { tenant });
  if (!run) throw runNotFound(runId);
  const entry = (await listCheckpoints(ctx.store, runId)).find((c) => c.step === step);
  if (!entry || entry.status === 'deleted') {
    throw new AnnealError(
      'ANNEAL_ERR_CHECKPOINT_NOT_FOUND',
      entry
        ? `run '${runId}' deleted its checkpoint at step ${step} (checkpoint retention)`
        : `run '${runId}' has no checkpoint at step ${step}`,
    );
  }
  const what = `checkpoint ${step} of run '${runId}'`;
  const trainer = (run.spec as { endpoints?: { trainer?: string } }).endpoints?.trainer;
  const endpoint = trainer === undefined ? undefined : ctx.operator.trainers[trainer];
  const samplerPath = entry.samplerPath;
  if (trainer === undefined || samplerPath === undefined || endpoint?.type !== 'embedded') {
    throw new AnnealError(
      'ANNEAL_ERR_EXPORT_UNAVAILABLE',
      `${what}: ${samplerPath === undefined ? 'has no sampler export' : `was saved by trainer '${trainer ?? '?'}' (type ${endpoint?.type ?? 'unknown'}); this control plane exports embedded trainers' checkpoints`}`,
    );
  }
  const dir = embeddedExportDir(ctx.artifactDir, trainer, samplerPath);
  if (dir === null) {
    throw new AnnealError('ANNEAL_ERR_EXPORT_UNAVAILABLE', `${what}: sampler path ${samplerPath}`);
  }
  const files = await filesOf(dir, what);
  if (!files.some((f) => f.name === 'model.onnx')) {
    throw new AnnealError('ANNEAL_ERR_EXPORT_UNAVAILABLE', `${what}: no model.onnx in ${dir}`);
  }
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
    weights: { format: 'onnx', files: files.map((f) => f.name), trainer, samplerPath },
  };
  const bytes = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
  const head: TarEntry = {
    name: EXPORT_MANIFEST_FILE,
    size: bytes.length,
    mtime: now,
    source: bytes,
  };
  return { manifest, entries: [head, ...files] };
}
