// Checkpoints of the embedded trainer: a directory holding `checkpoint.json` (config, tensor
// table, optimizer step) and raw little-endian Float32 files for the weights and both Adam
// moments. checkpoint.json is written last, so a directory without it is an incomplete save. A
// save that fails (a full disk: ENOSPC) removes what it wrote — its `.tmp` file, the directory
// and any parent it created (a new model's directory) — so failed saves leave nothing behind.
import * as nodeFs from 'node:fs/promises';
import { readFile } from 'node:fs/promises';
import { endianness } from 'node:os';
import path from 'node:path';
import type { AdamState } from './optimizer.ts';
import type { ModelConfig } from './params.ts';
import { paramLayout, validateConfig } from './params.ts';

export const CHECKPOINT_FORMAT = 'anneal-embedded-checkpoint/v1';
const HEADER = 'checkpoint.json';

export interface Checkpoint {
  config: ModelConfig;
  params: Float32Array;
  /** Optimizer state; null for weights-only checkpoints. */
  adam: AdamState | null;
}

interface Header {
  format: string;
  config: ModelConfig;
  tensors: Array<{ name: string; shape: number[]; offset: number }>;
  size: number;
  files: { params: string; adamM?: string; adamV?: string };
  adamStep?: number;
}

function assertLittleEndian(): void {
  if (endianness() !== 'LE') throw new Error('embedded checkpoints need a little-endian host');
}

/** The file operations a save uses; tests inject failures (a full disk) through it. */
export interface CheckpointFs {
  mkdir(dir: string, options: { recursive: true }): Promise<string | undefined>;
  writeFile(file: string, data: Uint8Array | string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  rm(target: string, options: { recursive: true; force: true }): Promise<void>;
}

export const NODE_CHECKPOINT_FS: CheckpointFs = {
  mkdir: (dir, options) => nodeFs.mkdir(dir, options),
  writeFile: (file, data) => nodeFs.writeFile(file, data),
  rename: (from, to) => nodeFs.rename(from, to),
  rm: (target, options) => nodeFs.rm(target, options),
};

async function writeAtomic(fs: CheckpointFs, file: string, data: Uint8Array | string) {
  const tmp = `${file}.tmp`;
  try {
    await fs.writeFile(tmp, data);
    await fs.rename(tmp, file);
  } catch (error) {
    await fs.rm(tmp, { recursive: true, force: true }).catch(() => undefined);
    throw error;
  }
}

const bytes = (a: Float32Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

export async function saveCheckpoint(
  dir: string,
  checkpoint: Checkpoint,
  fs: CheckpointFs = NODE_CHECKPOINT_FS,
): Promise<void> {
  assertLittleEndian();
  const layout = paramLayout(checkpoint.config);
  if (checkpoint.params.length !== layout.size) {
    throw new RangeError(
      `checkpoint params have ${checkpoint.params.length} values, config needs ${layout.size}`,
    );
  }
  // The first directory this save created (undefined: `dir` existed), removed if it fails.
  const created = await fs.mkdir(dir, { recursive: true });
  try {
    await writeCheckpoint(fs, dir, checkpoint, layout);
  } catch (error) {
    if (created !== undefined) {
      await fs.rm(created, { recursive: true, force: true }).catch(() => undefined);
    }
    throw error;
  }
}

async function writeCheckpoint(
  fs: CheckpointFs,
  dir: string,
  checkpoint: Checkpoint,
  layout: ReturnType<typeof paramLayout>,
): Promise<void> {
  const header: Header = {
    format: CHECKPOINT_FORMAT,
    config: checkpoint.config,
    tensors: layout.tensors.map(({ name, shape, offset }) => ({ name, shape, offset })),
    size: layout.size,
    files: { params: 'params.f32' },
  };
  await writeAtomic(fs, path.join(dir, 'params.f32'), bytes(checkpoint.params));
  if (checkpoint.adam) {
    header.files.adamM = 'adam_m.f32';
    header.files.adamV = 'adam_v.f32';
    header.adamStep = checkpoint.adam.step;
    await writeAtomic(fs, path.join(dir, 'adam_m.f32'), bytes(checkpoint.adam.m));
    await writeAtomic(fs, path.join(dir, 'adam_v.f32'), bytes(checkpoint.adam.v));
  }
  await writeAtomic(fs, path.join(dir, HEADER), `${JSON.stringify(header, null, 2)}\n`);
}

async function readFloats(dir: string, file: string, size: number): Promise<Float32Array> {
  const buffer = await readFile(path.join(dir, file));
  if (buffer.byteLength !== size * 4) {
    throw new RangeError(
      `${path.join(dir, file)}: expected ${size * 4} bytes, found ${buffer.byteLength}`,
    );
  }
  const out = new Float32Array(size);
  bytes(out).set(buffer);
  return out;
}

export async function loadCheckpoint(dir: string): Promise<Checkpoint> {
  assertLittleEndian();
  let header: Header;
  try {
    header = JSON.parse(await readFile(path.join(dir, HEADER), 'utf8')) as Header;
  } catch (err) {
    throw new Error(`${dir} is not an embedded checkpoint (${HEADER}: ${(err as Error).message})`, {
      cause: err,
    });
  }
  if (header.format !== CHECKPOINT_FORMAT) {
    throw new Error(
      `${path.join(dir, HEADER)}: format ${String(header.format)}, expected ${CHECKPOINT_FORMAT}`,
    );
  }
  const config = validateConfig(header.config);
  const layout = paramLayout(config);
  if (header.size !== layout.size) {
    throw new Error(
      `${path.join(dir, HEADER)}: size ${header.size} does not match its config (${layout.size})`,
    );
  }
  const params = await readFloats(dir, header.files.params, layout.size);
  let adam: AdamState | null = null;
  if (header.files.adamM && header.files.adamV) {
    adam = {
      m: await readFloats(dir, header.files.adamM, layout.size),
      v: await readFloats(dir, header.files.adamV, layout.size),
      step: header.adamStep ?? 0,
    };
  }
  return { config, params, adam };
}
