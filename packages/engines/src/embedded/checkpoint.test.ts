import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type CheckpointFs,
  NODE_CHECKPOINT_FS,
  loadCheckpoint,
  saveCheckpoint,
} from './checkpoint.ts';
import { createAdamState } from './optimizer.ts';
import type { ModelConfig } from './params.ts';
import { initParams, paramLayout } from './params.ts';

const config: ModelConfig = {
  vocabSize: 20,
  blockSize: 8,
  nLayer: 1,
  nHead: 2,
  nEmbd: 8,
  head: 'lm',
};
const dirs: string[] = [];
const tempDir = async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'anneal-ckpt-'));
  dirs.push(dir);
  return dir;
};
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('checkpoints', () => {
  it('round-trips weights and optimizer state bit for bit', async () => {
    const layout = paramLayout(config);
    const params = new Float32Array(layout.size);
    initParams(layout, params, 5);
    const adam = createAdamState(layout.size);
    adam.m.fill(0.25);
    adam.v[3] = 7;
    adam.step = 12;
    const dir = path.join(await tempDir(), 'step-12');
    await saveCheckpoint(dir, { config, params, adam });
    const loaded = await loadCheckpoint(dir);
    expect(loaded.config).toEqual(config);
    expect(Buffer.from(loaded.params.buffer).equals(Buffer.from(params.buffer))).toBe(true);
    expect(loaded.adam?.step).toBe(12);
    expect(loaded.adam?.v[3]).toBe(7);
    expect(loaded.adam?.m[layout.size - 1]).toBe(0.25);
  });

  it('saves weights-only checkpoints and names the file when data is truncated', async () => {
    const layout = paramLayout(config);
    const dir = await tempDir();
    await saveCheckpoint(dir, { config, params: new Float32Array(layout.size), adam: null });
    expect((await loadCheckpoint(dir)).adam).toBeNull();
    await writeFile(path.join(dir, 'params.f32'), new Uint8Array(12));
    await expect(loadCheckpoint(dir)).rejects.toThrow(/params\.f32: expected \d+ bytes, found 12/);
    await expect(loadCheckpoint(path.join(dir, 'missing'))).rejects.toThrow(
      /not an embedded checkpoint/,
    );
  });

  it('a save that fails on a full disk removes what it wrote; the last good checkpoint stays', async () => {
    const layout = paramLayout(config);
    const params = new Float32Array(layout.size);
    initParams(layout, params, 1);
    const root = await tempDir();
    const good = path.join(root, 'm-old', 'weights', 'step-2');
    await saveCheckpoint(good, { config, params, adam: createAdamState(layout.size) });
    // The disk fills up during the second file of the next save, under a new model directory
    // (a retried run gets a new model).
    let writes = 0;
    const fullDisk: CheckpointFs = {
      ...NODE_CHECKPOINT_FS,
      async writeFile(file, data) {
        writes += 1;
        if (writes === 2) {
          await NODE_CHECKPOINT_FS.writeFile(file, new Uint8Array(3)); // a partial .tmp
          throw Object.assign(new Error(`ENOSPC: no space left on device, write '${file}'`), {
            code: 'ENOSPC',
          });
        }
        await NODE_CHECKPOINT_FS.writeFile(file, data);
      },
    };
    const next = path.join(root, 'm-new', 'weights', 'step-4');
    await expect(
      saveCheckpoint(next, { config, params, adam: createAdamState(layout.size) }, fullDisk),
    ).rejects.toMatchObject({ code: 'ENOSPC' });
    // Nothing of the failed save is left: not its directory, not the new model's directory.
    expect((await readdir(root)).sort()).toEqual(['m-old']);
    expect((await loadCheckpoint(good)).params).toEqual(params);
  });
});
