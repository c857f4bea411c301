// probeVllmEndpoint against the fake vLLM of both generations: version, served models and
// max_model_len, LoRA routes, load_inplace, the adapter directory; and the failures it reports.
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadInplaceFromVersion, probeVllmEndpoint } from './probe.ts';
import { FakeVllmServer } from '../../test/vllm/fake-server.ts';

const open: FakeVllmServer[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((f) => f.close()));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function fake(options: Parameters<typeof FakeVllmServer.start>[0] = {}) {
  const server = await FakeVllmServer.start(options);
  open.push(server);
  return server;
}

const exercised = {
  load: { ok: true, detail: expect.stringMatching(/^loaded a scratch adapter from /) as string },
  sample: {
    ok: true,
    detail: expect.stringMatching(/^sampled one token from 'anneal-check-/) as string,
  },
  unload: { ok: true, detail: expect.stringMatching(/^unloaded 'anneal-check-/) as string },
};

describe('probeVllmEndpoint', () => {
  it('reports version, models with max_model_len, LoRA and load_inplace per generation', async () => {
    const [old, current] = await Promise.all([
      fake({ generation: 'v0.11', maxModelLen: 4096 }),
      fake({ generation: 'current', maxModelLen: 32768 }),
    ]);
    current.adapters.set('policy@3', '/a/p');
    const root = await mkdtemp(join(tmpdir(), 'anneal-probe-'));
    dirs.push(root);
    const probe = await probeVllmEndpoint({
      name: 'gen',
      replicas: [old.url, current.url],
      model: 'base-model',
      adapterRoot: root,
    });
    expect(probe).toEqual({
      endpoint: 'gen',
      ok: true,
      adapterDir: { path: root, exists: true, readable: true, writable: true },
      replicas: [
        {
          url: old.url,
          healthy: true,
          version: '0.11.2',
          loadInplace: false,
          models: [{ id: 'base-model', maxModelLen: 4096, ownedBy: 'vllm' }],
          servesModel: true,
          loraEnabled: true,
          lora: exercised,
          problems: [],
        },
        {
          url: current.url,
          healthy: true,
          version: '0.20.1',
          loadInplace: true,
          models: [
            { id: 'base-model', maxModelLen: 32768, ownedBy: 'vllm' },
            { id: 'policy@3', maxModelLen: 32768, parent: 'base-model', ownedBy: 'vllm' },
          ],
          servesModel: true,
          loraEnabled: true,
          lora: exercised,
          problems: [],
        },
      ],
    });
    // Only the scratch adapter was loaded, and it is gone again (from the server and the disk).
    expect([...current.adapters.keys()]).toEqual(['policy@3']);
    expect(
      old.requestsTo('/v1/completions').map((q) => (q.body as { model: string }).model),
    ).toEqual([expect.stringMatching(/^anneal-check-[0-9a-f]{12}$/)]);
    expect(await readdir(root)).toEqual([]);
  });

  it('names what is wrong: LoRA off, wrong model, dead engine, unreachable, no adapter dir', async () => {
    const noLora = await fake({ runtimeLoraUpdating: false, version: null });
    const dead = await fake();
    dead.healthStatus = 503;
    const gone = await fake();
    await gone.stop();
    const probe = await probeVllmEndpoint({
      name: 'gen',
      replicas: [noLora.url, dead.url, gone.url],
      model: 'Qwen/Qwen3-8B',
      adapterRoot: '/nonexistent/anneal-adapters',
    });
    expect(probe.ok).toBe(false);
    const [a, b, c] = probe.replicas;
    expect(a?.loraEnabled).toBe(false);
    expect(a?.version).toBeUndefined();
    expect(a?.problems).toEqual(["does not serve 'Qwen/Qwen3-8B' (serves: base-model)"]);
    // The adapter root does not exist on this machine: no scratch adapter, so no LoRA check.
    expect(a?.lora?.load.detail).toMatch(/^cannot write a scratch adapter: .*nonexistent/);
    expect(b?.healthy).toBe(false);
    expect(b?.problems[0]).toBe('/health answered 503');
    expect(c).toMatchObject({ healthy: false, models: [] });
    expect(c?.problems[0]).toContain('ECONNREFUSED');
    expect(probe.adapterDir).toMatchObject({ exists: false, writable: false });
    expect(probe.adapterDir?.problem).toContain('does not exist');
  });

  it('reports an adapter root that is a file, not a directory', async () => {
    const root = await mkdtemp(join(tmpdir(), 'anneal-probe-file-'));
    dirs.push(root);
    const file = join(root, 'adapters');
    await writeFile(file, '');
    const server = await fake();
    const probe = await probeVllmEndpoint({ name: 'g', replicas: [server.url], adapterRoot: file });
    expect(probe.adapterDir).toEqual({
      path: file,
      exists: false,
      readable: false,
      writable: false,
      problem: `${file} is not a directory`,
    });
    expect(probe.ok).toBe(false);
  });
});

describe('loadInplaceFromVersion', () => {
  it('knows releases before and after vLLM PR #31326', () => {
    expect(loadInplaceFromVersion('0.11.2')).toBe(false);
    expect(loadInplaceFromVersion('0.13.0')).toBe(false);
    expect(loadInplaceFromVersion('0.14.1')).toBeUndefined();
    expect(loadInplaceFromVersion('0.15.0')).toBe(true);
    expect(loadInplaceFromVersion('v0.20.1')).toBe(true);
    expect(loadInplaceFromVersion('0.13.1.dev42+gabc')).toBeUndefined();
    expect(loadInplaceFromVersion('unknown')).toBeUndefined();
  });
});
