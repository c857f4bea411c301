// examples/: every run spec is accepted by the validation POST /v1/runs applies (parseRunSpec, then
// resolveRunSpec against an operator config: the functions the control plane's submitRun calls),
// under each example operator config and under `anneal up`'s embedded config; every operator
// config is accepted by the parser the control plane and workers start with; every sweep expands
// (parseSweep, as POST /v1/sweeps) into run specs that resolve the same way.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  type OperatorConfig,
  localOperatorConfig,
  parseOperatorConfig,
  parseRunSpec,
  parseSweep,
  resolveRunSpec,
  validateRunSpec,
} from '@anneal/protocol';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');
const examples = join(root, 'examples');
const read = (...parts: string[]) => readFileSync(join(examples, ...parts), 'utf8');
const yamlFiles = (dir: string) =>
  readdirSync(join(examples, dir))
    .filter((f) => f.endsWith('.yaml'))
    .sort();

function operatorConfig(file: string): OperatorConfig {
  const parsed = parseOperatorConfig(read('operator', file));
  if (!parsed.ok) throw new Error(`${file}: ${JSON.stringify(parsed.errors)}`);
  return parsed.value;
}

const configs: Record<string, () => OperatorConfig> = {
  'anneal up (embedded)': () => localOperatorConfig('0'.repeat(64)),
  ...Object.fromEntries(yamlFiles('operator').map((f) => [f, () => operatorConfig(f)])),
};

describe('examples/', () => {
  it('has a spec for each run kind and the two real deployments', () => {
    expect(yamlFiles('runs')).toEqual(['eval-sweep.yaml', 'grpo.yaml', 'rm.yaml', 'sft.yaml']);
    expect(yamlFiles('operator')).toEqual(['hosted-tinker.yaml', 'qwen3-vllm-skyrl.yaml']);
    expect(yamlFiles('sweeps')).toEqual(['grpo-lr-length.yaml']);
    const kinds = yamlFiles('runs').map((f) => {
      const parsed = parseRunSpec(read('runs', f));
      return parsed.ok ? parsed.value.kind : f;
    });
    expect(kinds.sort()).toEqual(['eval', 'grpo', 'rm', 'sft']);
  });

  it.each(yamlFiles('operator'))('operator config %s parses', (file) => {
    const config = operatorConfig(file);
    expect(Object.keys(config.trainers).length).toBeGreaterThan(0);
  });

  it('the SkyRL deployment declares the JAX backend with its reduction and vLLM LoRA rank', () => {
    const config = operatorConfig('qwen3-vllm-skyrl.yaml');
    const skyrl = config.trainers['skyrl'];
    expect(skyrl?.type === 'tinker' && skyrl.backend).toBe('skyrl-jax');
    expect(skyrl?.capabilities.reduction).toBe('mean_per_sequence');
    const vllm = config.inference['qwen-vllm'];
    expect(vllm?.type === 'vllm' && vllm.maxLoraRank).toBe(32);
  });

  for (const [name, config] of Object.entries(configs)) {
    it.each(yamlFiles('runs'))(`run spec %s is accepted under ${name}`, (file) => {
      const parsed = parseRunSpec(read('runs', file));
      expect(parsed.ok ? [] : parsed.errors).toEqual([]);
      if (!parsed.ok) return;
      const resolved = resolveRunSpec(parsed.value, config());
      expect(resolved.ok ? [] : resolved.errors).toEqual([]);
    });
  }

  for (const [name, config] of Object.entries(configs)) {
    it.each(yamlFiles('sweeps'))(`sweep %s expands into runs accepted under ${name}`, (file) => {
      const parsed = parseSweep(read('sweeps', file));
      expect(parsed.ok ? [] : parsed.errors).toEqual([]);
      if (!parsed.ok) return;
      expect(parsed.points.length).toBeGreaterThan(1);
      for (const point of parsed.points) {
        const spec = validateRunSpec(point.spec);
        expect(spec.ok ? [] : spec.errors).toEqual([]);
        if (!spec.ok) continue;
        const resolved = resolveRunSpec(spec.value, config());
        expect(resolved.ok ? [] : resolved.errors).toEqual([]);
      }
    });
  }

  it('the same check refuses a broken example, naming the field', () => {
    const text = read('runs', 'grpo.yaml').replace('groupSize: 8', 'groupSize: many');
    const parsed = parseRunSpec(text);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? [] : parsed.errors.map((e) => e.path)).toContain('/rollout/groupSize');
  });

  it('the README quick start links every example', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    for (const dir of ['runs', 'sweeps', 'operator']) {
      for (const file of yamlFiles(dir)) expect(readme).toContain(`examples/${dir}/${file}`);
    }
  });
});
