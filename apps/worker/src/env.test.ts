import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JOB_CATALOGUE } from '@anneal/protocol';
import { loadWorkerConfig, parseWorkerEnv } from './env.ts';
import { WorkerConfigError } from './errors.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'anneal-env-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const OPERATOR_CONFIG = `
pools:
  gpu: { slots: 4 }
inference:
  vllm-main: { type: vllm, replicas: ["http://gpu-1:8000"], apiKeyEnv: VLLM_KEY }
trainers:
  tinker:
    type: tinker
    url: http://trainer:8000
    apiKeyEnv: TINKER_KEY
    capabilities: { kinds: [sft, grpo], losses: [cross_entropy, importance_sampling] }
baseModels:
  qwen: { model: Qwen/Qwen3-8B }
tenants:
  research: {}
tokens:
  - { name: ops, sha256: "${'a'.repeat(64)}", role: operator, tenant: research }
`;

describe('worker environment', () => {
  it('applies defaults: local mode, pool default, catalogue lock settings', () => {
    const config = loadWorkerConfig({});
    expect(config.configPath).toBeNull();
    expect(config.pool).toBe('default');
    expect(config.slots).toBe(1);
    expect(config.keyPrefix).toBe('{anneal}');
    expect(config.queue.lockDurationMs).toBe(JOB_CATALOGUE.run.lockDurationMs);
    expect(config.operatorConfig.trainers.embedded?.type).toBe('embedded');
    expect(config.workerId).toMatch(new RegExp(`-${process.pid}$`));
    expect(config.heapGrowingPercent).toBe(300);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('converts numbers and accepts any pool in local mode', () => {
    const config = loadWorkerConfig({
      ANNEAL_POOL: 'cpu-small',
      ANNEAL_SLOTS: '3',
      ANNEAL_HEARTBEAT_SECONDS: '0.5',
      ANNEAL_METRICS_PORT: '0',
      ANNEAL_LOCK_DURATION_MS: '2000',
      ANNEAL_WORKER_ID: 'w-1',
      ANNEAL_HEAP_GROWING_PERCENT: '0',
    });
    expect(config).toMatchObject({
      pool: 'cpu-small',
      slots: 3,
      workerId: 'w-1',
      heartbeatSeconds: 0.5,
      heapGrowingPercent: 0,
    });
    expect(config.metrics.port).toBe(0);
    expect(config.queue.lockDurationMs).toBe(2000);
    expect(config.operatorConfig.pools['cpu-small']?.slots).toBe(3);
  });

  it('names the variable at fault', () => {
    expect(() => parseWorkerEnv({ ANNEAL_SLOTS: 'zero' })).toThrow(/^ANNEAL_SLOTS: .*"zero"/);
    expect(() => parseWorkerEnv({ ANNEAL_SLOTS: '0' })).toThrow(/ANNEAL_SLOTS/);
    expect(() => parseWorkerEnv({ REDIS_URL: 'http://x' })).toThrow(/REDIS_URL/);
    expect(() => parseWorkerEnv({ ANNEAL_KEY_PREFIX: 'anneal' })).toThrow(/ANNEAL_KEY_PREFIX/);
    expect(() => parseWorkerEnv({ ANNEAL_LOG_LEVEL: 'loud' })).toThrow(/ANNEAL_LOG_LEVEL/);
    expect(() => parseWorkerEnv({ ANNEAL_POOL: 'GPU' })).toThrow(/ANNEAL_POOL/);
    expect(() => parseWorkerEnv({ ANNEAL_HEAP_GROWING_PERCENT: '-1' })).toThrow(
      /^ANNEAL_HEAP_GROWING_PERCENT: .*"-1"/,
    );
    expect(() => parseWorkerEnv({ ANNEAL_HEAP_GROWING_PERCENT: '2000' })).toThrow(
      /ANNEAL_HEAP_GROWING_PERCENT/,
    );
    // a fraction is refused, not truncated (TypeBox's Convert alone made 12.5 into 12)
    expect(() => parseWorkerEnv({ ANNEAL_HEAP_GROWING_PERCENT: '12.5' })).toThrow(
      /^ANNEAL_HEAP_GROWING_PERCENT: .*integer.*"12.5"/,
    );
    expect(() => parseWorkerEnv({ ANNEAL_SLOTS: '2.5' })).toThrow(/^ANNEAL_SLOTS: .*"2.5"/);
  });

  it('reads the operator config: pool slots, secrets from the named env vars', async () => {
    const file = path.join(dir, 'anneal.yaml');
    await writeFile(file, OPERATOR_CONFIG);
    const config = loadWorkerConfig({
      ANNEAL_CONFIG: file,
      ANNEAL_POOL: 'gpu',
      VLLM_KEY: 'k1',
      TINKER_KEY: 'k2',
    });
    expect(config.configPath).toBe(file);
    expect(config.slots).toBe(4);
    expect(config.secrets).toEqual({ TINKER_KEY: 'k2', VLLM_KEY: 'k1' });
  });

  it('rejects an undeclared pool, a missing secret, and an invalid config file (with line)', async () => {
    const file = path.join(dir, 'anneal.yaml');
    await writeFile(file, OPERATOR_CONFIG);
    const secrets = { VLLM_KEY: 'k1', TINKER_KEY: 'k2' };
    expect(() => loadWorkerConfig({ ANNEAL_CONFIG: file, ...secrets })).toThrow(
      /pool 'default' is not declared .*declared: gpu/,
    );
    expect(() =>
      loadWorkerConfig({ ANNEAL_CONFIG: file, ANNEAL_POOL: 'gpu', VLLM_KEY: 'k' }),
    ).toThrow(/^TINKER_KEY: .*unset/);
    await writeFile(file, OPERATOR_CONFIG.replace('slots: 4', 'slots: many'));
    const error = (() => {
      try {
        loadWorkerConfig({ ANNEAL_CONFIG: file, ANNEAL_POOL: 'gpu', ...secrets });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(WorkerConfigError);
    expect(String(error)).toMatch(/\/pools\/gpu\/slots \(line 3\)/);
    expect(() => loadWorkerConfig({ ANNEAL_CONFIG: path.join(dir, 'missing.yaml') })).toThrow(
      /ANNEAL_CONFIG: cannot read/,
    );
  });
});
