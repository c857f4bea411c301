// Sampler weights on shared storage -> a LoRA adapter directory vLLM can load
// (docs/engines.md "Weight sync to the sampler"). The resolved path may be:
// - an archive (`….tar.gz`, `.tgz`, `.tar`): unpacked next to it, into the path minus the
//   extension;
// - a directory path whose `<path>.tar.gz` exists (SkyRL's layout, where the resolver yields
//   `{root}/{model_id}/sampler_weights/{name}` and SkyRL wrote `{name}.tar.gz`): unpacked into
//   `<path>`;
// - a directory: used as is.
// An existing unpacked directory is reused (checkpoint names are never rewritten: SkyRL's
// external-inference path does the same). The directory is then classified: `adapter_config.json`
// is a LoRA adapter (its rank `r` is read), `config.json` alone is a full model, a lone `MARKER`
// is SkyRL's `persist=False` stand-in. Anything else, and a path this process cannot see, is left
// to the server to judge.
import { readFile, readdir, stat } from 'node:fs/promises';
import { extractArchive } from './archive.ts';
import type { ArchiveLimits } from './archive.ts';
import { AdapterError } from './errors.ts';

const ARCHIVE_SUFFIXES = ['.tar.gz', '.tgz', '.tar'] as const;

export type SamplerWeightsKind =
  /** A PEFT LoRA adapter directory (adapter_config.json + adapter_model.*). */
  | 'lora'
  /** A full (merged) Hugging Face model directory. */
  | 'full'
  /** Neither: left to the server to accept or refuse (vLLM answers 404 "No adapter found"). */
  | 'unknown'
  /** Not visible from this process (e.g. mounted only on the replicas). */
  | 'unavailable';

export interface PreparedSamplerWeights {
  /** The directory to hand to the server. */
  dir: string;
  kind: SamplerWeightsKind;
  /** LoRA rank `r` from adapter_config.json (kind 'lora'). */
  rank?: number;
  /** The archive this directory was unpacked from, when one was used. */
  archive?: string;
  /** True when this call unpacked it (false: reused, or another process won the race). */
  unpacked: boolean;
}

export interface PrepareOptions {
  limits?: ArchiveLimits;
}

/** Unpacks (when needed) and classifies the sampler weights at `path`. */
export async function prepareSamplerWeights(
  path: string,
  options: PrepareOptions = {},
): Promise<PreparedSamplerWeights> {
  const { archive, dir } = await locate(path);
  let unpacked = false;
  if (archive !== undefined && (await kindOf(dir)) !== 'directory') {
    unpacked = (await extractArchive(archive, dir, options.limits)).extracted;
  }
  const classified = await classify(dir);
  return { dir, ...classified, ...(archive !== undefined && { archive }), unpacked };
}

async function locate(path: string): Promise<{ archive?: string; dir: string }> {
  const suffix = ARCHIVE_SUFFIXES.find((s) => path.endsWith(s));
  if (suffix !== undefined) return { archive: path, dir: path.slice(0, -suffix.length) };
  if ((await kindOf(path)) === 'directory') return { dir: path };
  for (const s of ARCHIVE_SUFFIXES) {
    if ((await kindOf(path + s)) === 'file') return { archive: path + s, dir: path };
  }
  return { dir: path };
}

/** What the directory holds; `unavailable` when this process cannot see it. */
export async function classify(
  dir: string,
): Promise<Pick<PreparedSamplerWeights, 'kind' | 'rank'>> {
  if ((await kindOf(dir)) !== 'directory') return { kind: 'unavailable' };
  const names = new Set(await readdir(dir));
  if (names.has('adapter_config.json')) return { kind: 'lora', rank: await rankOf(dir) };
  if (names.has('config.json')) return { kind: 'full' };
  if (names.size === 1 && names.has('MARKER')) {
    throw new AdapterError(
      'marker-only',
      dir,
      "holds only SkyRL's MARKER file: the trainer saved with persist=False, so the weights " +
        'live in its colocated inference engines, not on disk (save sampler weights with ' +
        'persistence on for an external vLLM)',
    );
  }
  return { kind: 'unknown' };
}

async function rankOf(dir: string): Promise<number> {
  const file = `${dir}/adapter_config.json`;
  let config: unknown;
  try {
    config = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new AdapterError('bad-config', file, 'is not readable JSON', error);
  }
  const r = (config as { r?: unknown } | null)?.r;
  if (typeof r !== 'number' || !Number.isInteger(r) || r < 1) {
    throw new AdapterError(
      'bad-config',
      file,
      `has no positive integer rank \`r\` (got ${String(r)})`,
    );
  }
  return r;
}

async function kindOf(path: string): Promise<'file' | 'directory' | 'other' | 'missing'> {
  try {
    const info = await stat(path);
    return info.isDirectory() ? 'directory' : info.isFile() ? 'file' : 'other';
  } catch {
    return 'missing';
  }
}
