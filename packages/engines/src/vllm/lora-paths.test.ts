// tinker:// sampler weights -> adapter paths on the replicas' shared storage.
import { describe, expect, it } from 'vitest';
import { adapterPathResolver, parseSamplerUri } from './lora-paths.ts';

describe('adapterPathResolver', () => {
  it('maps SkyRL/embedded and hosted-Tinker sampler URIs under the mounted checkpoint base', () => {
    const resolve = adapterPathResolver({ root: '/mnt/ckpt/' });
    expect(resolve({ name: 'p', path: 'tinker://model-1/run-sampler-0' })).toBe(
      '/mnt/ckpt/model-1/sampler_weights/run-sampler-0',
    );
    expect(resolve({ name: 'p', path: 'tinker://a1b2:train:0/sampler_weights/000080' })).toBe(
      '/mnt/ckpt/a1b2:train:0/sampler_weights/000080',
    );
    expect(resolve({ name: 'p', path: '/already/shared/dir' })).toBe('/already/shared/dir');
  });

  it('applies a custom layout', () => {
    const resolve = adapterPathResolver({ root: '/a', layout: 'unpacked/{model_id}-{name}' });
    expect(resolve({ name: 'p', path: 'tinker://m/n' })).toBe('/a/unpacked/m-n');
  });

  it('rejects training checkpoints, traversal and a bad storage with the field named', () => {
    const resolve = adapterPathResolver({ root: '/a' }, "vLLM endpoint 'q'");
    expect(() => resolve({ name: 'p', path: 'tinker://m/weights/step-3' })).toThrow(
      "vLLM endpoint 'q': 'tinker://m/weights/step-3' is not a sampler-weights path",
    );
    expect(() => resolve({ name: 'p', path: 'tinker://../etc' })).toThrow('not a sampler');
    expect(() => adapterPathResolver({ root: 'rel' })).toThrow(
      'adapters.root must be an absolute path',
    );
    expect(() => adapterPathResolver({ root: '/a', layout: '{model_id}' })).toThrow(
      'adapters.layout',
    );
    expect(() => adapterPathResolver({ root: '/a', layout: '../{name}' })).toThrow(
      'adapters.layout',
    );
  });

  it('parses only sampler URIs', () => {
    expect(parseSamplerUri('tinker://m/n')).toEqual({ modelId: 'm', name: 'n' });
    expect(parseSamplerUri('s3://m/n')).toBeUndefined();
    expect(parseSamplerUri('tinker://m')).toBeUndefined();
  });
});
