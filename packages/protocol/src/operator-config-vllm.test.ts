// The vLLM inference endpoint block of the operator config: defaults, adapter storage, errors.
import { describe, expect, it } from 'vitest';
import { parseOperatorConfig } from './operator-config-parse.ts';

const HASH = 'b'.repeat(64);
const config = (vllm: string) => `
pools: {gpu: {slots: 1}}
inference:
  qwen: {type: vllm, replicas: ["http://vllm-0.vllm:8000"]${vllm}}
tenants: {acme: {}}
tokens: [{name: a, sha256: ${HASH}, role: submitter, tenant: acme}]
`;

function parsed(vllm: string) {
  const result = parseOperatorConfig(config(vllm));
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  const entry = result.value.inference.qwen;
  if (entry?.type !== 'vllm') throw new Error('expected a vllm entry');
  return entry;
}

function errorsOf(vllm: string) {
  const result = parseOperatorConfig(config(vllm));
  if (result.ok) throw new Error('expected errors');
  return result.errors;
}

describe('operator config: vLLM endpoints', () => {
  it('applies the client defaults and leaves optional fields unset', () => {
    const entry = parsed('');
    expect(entry).toEqual({
      type: 'vllm',
      replicas: ['http://vllm-0.vllm:8000'],
      maxInFlight: 64,
      requestTimeoutSeconds: 600,
      retryAttempts: 4,
      readerThreads: 0, // replies read on the event loop
      logprobsMode: 'raw_logprobs', // vLLM's own default (docs/engines.md "Logprobs and temperature")
      schedulingPolicy: 'fcfs', // vLLM's own default (docs/operations.md "Fair share of an endpoint")
    });
  });

  it('reads the scheduling policy and --max-num-seqs (fair share of the endpoint)', () => {
    expect(parsed(', schedulingPolicy: priority, maxNumSeqs: 256')).toMatchObject({
      schedulingPolicy: 'priority',
      maxNumSeqs: 256,
    });
  });

  it('accepts every tuning field and the adapter storage with the SkyRL layout default', () => {
    const entry = parsed(
      ', servedModel: qwen3, maxModelLen: 32768, maxInFlight: 256, requestTimeoutSeconds: 120,' +
        ' retryAttempts: 2, readerThreads: 4, adapters: {root: /mnt/anneal-checkpoints}',
    );
    expect(entry).toMatchObject({
      readerThreads: 4,
      servedModel: 'qwen3',
      maxModelLen: 32768,
      maxInFlight: 256,
      requestTimeoutSeconds: 120,
      retryAttempts: 2,
      adapters: { root: '/mnt/anneal-checkpoints', layout: '{model_id}/sampler_weights/{name}' },
    });
    expect(parsed(', adapters: {root: /mnt/a, layout: "unpacked/{name}"}').adapters?.layout).toBe(
      'unpacked/{name}',
    );
  });

  it('names the field of a bad value', () => {
    const cases: Array<[string, string]> = [
      [', maxInFlight: 0', '/inference/qwen/maxInFlight'],
      [', requestTimeoutSeconds: 0', '/inference/qwen/requestTimeoutSeconds'],
      [', retryAttempts: 1.5', '/inference/qwen/retryAttempts'],
      [', readerThreads: 65', '/inference/qwen/readerThreads'],
      [', maxModelLen: 1', '/inference/qwen/maxModelLen'],
      [', adapters: {root: relative/dir}', '/inference/qwen/adapters/root'],
      [', adapters: {}', '/inference/qwen/adapters/root'],
      [', adapters: {root: /mnt/a, layout: "{model_id}/x"}', '/inference/qwen/adapters/layout'],
      [', adapters: {root: /mnt/a, layout: "/abs/{name}"}', '/inference/qwen/adapters/layout'],
      [', adapters: {root: /mnt/a, layout: "../{name}"}', '/inference/qwen/adapters/layout'],
      [', adapters: {root: /mnt/a, layout: "{step}/{name}"}', '/inference/qwen/adapters/layout'],
      [', loraPath: /mnt', '/inference/qwen/loraPath'],
      [', schedulingPolicy: sjf', '/inference/qwen/schedulingPolicy'],
      [', maxNumSeqs: 0', '/inference/qwen/maxNumSeqs'],
      [', maxNumSeqs: 2.5', '/inference/qwen/maxNumSeqs'],
    ];
    for (const [vllm, path] of cases) {
      expect(
        errorsOf(vllm).map((e) => e.path),
        vllm,
      ).toEqual([path]);
    }
  });
});
