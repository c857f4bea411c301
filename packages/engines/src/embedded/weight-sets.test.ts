// WeightSets' residency as vLLM's LoRA cache keeps adapters (vllm/lora/worker_manager.py@0030b9ff
// `LRUCacheWorkerLoRAManager`): names stay listed past the capacity, the least recently used idle
// set is evicted, a set in use is never evicted (a request for another set waits for it), and an
// evicted set is read again on use. The engine here records the ONNX sessions it is asked to hold
// (the real one is exercised in sampler-server.test.ts).
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ONNX_EXPORT_FORMAT } from './onnx-export.ts';
import type { WeightSetError } from './weight-sets.ts';
import { WeightSets } from './weight-sets.ts';

let dir: string;
const exportDir = (name: string) => path.join(dir, name);

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'anneal-weight-sets-'));
  for (const name of ['a', 'b', 'c']) {
    await mkdir(exportDir(name));
    const manifest = { format: ONNX_EXPORT_FORMAT, decoder: 'decoder.onnx' };
    await writeFile(path.join(exportDir(name), 'export.json'), JSON.stringify(manifest));
  }
  await mkdir(exportDir('peft'));
  await writeFile(path.join(exportDir('peft'), 'export.json'), '{"format":"peft"}');
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Holds what the sets would hold in ONNX sessions. */
function sessions() {
  const held = new Set<string>();
  const loads: string[] = [];
  return {
    held,
    loads,
    engine: {
      loadWeights: ({ name }: { name: string }) => {
        held.add(name);
        loads.push(name);
        return Promise.resolve();
      },
      releaseWeights: (name: string) => {
        held.delete(name);
        return Promise.resolve();
      },
    },
  };
}

describe('WeightSets', () => {
  it('keeps at most maxResident sets held; a set in use is not evicted, the other request waits', async () => {
    const s = sessions();
    const sets = new WeightSets(s.engine, 1);
    await sets.load('a', exportDir('a'));
    await sets.load('b', exportDir('b')); // evicts a (idle), which stays listed
    expect(sets.listed().map(([name]) => name)).toEqual(['a', 'b']);
    expect([...s.held]).toEqual(['b']);
    const releaseB = await sets.acquire('b');
    let gotA = false;
    const a = sets.acquire('a').then((release) => {
      gotA = true;
      return release;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(gotA).toBe(false); // b is in use: a waits for it
    expect([...s.held]).toEqual(['b']);
    releaseB();
    const releaseA = await a;
    expect([...s.held]).toEqual(['a']); // read again
    releaseA();
    expect(s.loads).toEqual(['a', 'b', 'a']);
    expect(sets.stats()).toMatchObject({ reads: 3, evictions: 2, peakResident: 1, listed: 2 });
    expect(await sets.unload('a')).toBe(true);
    expect(await sets.unload('a')).toBe(false);
    expect([...s.held]).toEqual([]);
  });

  it('refuses a second load of a name, a missing export and another kind of directory', async () => {
    const sets = new WeightSets(sessions().engine, 2);
    await sets.load('x', exportDir('c'));
    const refusal = (name: string, where: string) =>
      sets.load(name, where).then(
        () => undefined,
        (error: WeightSetError) => [error.kind, error.message],
      );
    expect(await refusal('x', exportDir('a'))).toEqual([
      'loaded',
      "The lora adapter 'x' has already been loaded.",
    ]);
    expect(await refusal('y', exportDir('none'))).toEqual([
      'missing',
      `No adapter found for ${exportDir('none')}`,
    ]);
    expect((await refusal('y', exportDir('peft')))?.[0]).toBe('invalid');
    expect(sets.listed()).toEqual([['x', exportDir('c')]]);
    await expect(sets.acquire('y')).rejects.toThrow('The model `y` does not exist.');
  });
});
