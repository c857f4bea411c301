import { describe, expect, it } from 'vitest';
import { localOperatorConfig, parseOperatorConfig } from './operator-config-parse.ts';

const HASH = 'a'.repeat(64);
const VALID = `
pools:
  gpu: {slots: 2}
inference:
  qwen: {type: vllm, replicas: ["http://10.0.0.1:8000", "http://10.0.0.2:8000"]}
trainers:
  tinker: {type: tinker, url: "http://10.0.0.3:8080", apiKeyEnv: TINKER_API_KEY,
           capabilities: {kinds: [sft, grpo], losses: [cross_entropy, importance_sampling]}}
search:
  web: {type: searxng, url: "http://searx:8080"}
baseModels:
  qwen3-8b: {model: Qwen/Qwen3-8B}
defaults: {pool: gpu, inference: qwen, trainer: tinker, search: web, baseModel: qwen3-8b}
tenants:
  acme: {maxConcurrentRuns: 2}
  beta: {}
tokens:
  - {name: alice, sha256: ${HASH}, role: submitter, tenant: acme}
`;

function errorsOf(text: string) {
  const result = parseOperatorConfig(text);
  if (result.ok) throw new Error('expected errors');
  return result.errors;
}

describe('parseOperatorConfig', () => {
  it('accepts a full config and applies defaults', () => {
    const result = parseOperatorConfig(VALID);
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(result.value.tenants.beta?.maxConcurrentRuns).toBe(4);
    expect(result.value.tenants.beta?.weight).toBe(1); // equal shares unless the operator says
    expect(result.value.rateLimit).toEqual({ max: 600, windowSeconds: 60 });
    expect(result.value.trainers.tinker?.capabilities.reduction).toBe('sum');
    expect(result.value.rewardModels).toEqual({});
  });

  it('reads a tenant share weight and names the field of a bad one', () => {
    const result = parseOperatorConfig(VALID.replace('{maxConcurrentRuns: 2}', '{weight: 3}'));
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(result.value.tenants.acme?.weight).toBe(3);
    for (const bad of ['0', '-1', '1001']) {
      const errs = errorsOf(VALID.replace('{maxConcurrentRuns: 2}', `{weight: ${bad}}`));
      expect(errs.map((e) => e.path)).toEqual(['/tenants/acme/weight']);
    }
  });

  it("reads the ledger's compression (brotli unless set) and names the field of a bad one", () => {
    const result = parseOperatorConfig(VALID);
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(result.value.ledger.compression).toBe('brotli');
    const gzip = parseOperatorConfig(`${VALID}ledger: {compression: gzip}\n`);
    if (!gzip.ok) throw new Error(JSON.stringify(gzip.errors));
    expect(gzip.value.ledger.compression).toBe('gzip');
    expect(gzip.value.ledger.keepAllSteps).toBe(20);
    const errs = errorsOf(`${VALID}ledger: {compression: zstd}\n`);
    expect(errs.map((e) => e.path)).toEqual(['/ledger/compression']);
  });

  it('explains a bad discriminated entry against the variant it names', () => {
    const errs = errorsOf(
      VALID.replace('type: searxng, url: "http://searx:8080"', 'type: searxng'),
    );
    expect(errs).toEqual([
      { path: '/search/web/url', message: 'required field is missing', line: 10 },
    ]);
    const unknownType = errorsOf(VALID.replace('type: searxng', 'type: bing'));
    expect(unknownType[0]).toMatchObject({
      path: '/search/web/type',
      message: 'expected one of local, searxng',
    });
  });

  it('accepts a base model with a Hugging Face tokenizer and tool-call markers', () => {
    const qwen = `qwen3-8b:
    model: Qwen/Qwen3-8B
    tokenizer: {type: hf, path: /models/qwen3/tokenizer.json, eosToken: "<|im_end|>"}
    toolFormat: {user: "<|im_start|>", assistant: "<|im_end|>", callStart: "<tool_call>",
                 callEnd: "</tool_call>", resultStart: "<tool_response>",
                 resultEnd: "</tool_response>", answer: "<answer>"}
  tiny: {model: "embedded:tiny", tokenizer: byte}`;
    const result = parseOperatorConfig(VALID.replace('qwen3-8b: {model: Qwen/Qwen3-8B}', qwen));
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(result.value.baseModels['qwen3-8b']?.tokenizer).toEqual({
      type: 'hf',
      path: '/models/qwen3/tokenizer.json',
      eosToken: '<|im_end|>',
    });
    expect(result.value.baseModels['qwen3-8b']?.toolFormat?.callEnd).toBe('</tool_call>');
    expect(result.value.baseModels['tiny']?.tokenizer).toBe('byte');
  });

  it('names the field of a bad hf tokenizer or tool format', () => {
    const noEos = errorsOf(
      VALID.replace(
        'qwen3-8b: {model: Qwen/Qwen3-8B}',
        'qwen3-8b: {model: Qwen/Qwen3-8B, tokenizer: {type: hf, path: /t.json}}',
      ),
    );
    expect(noEos.map((e) => e.path)).toContain('/baseModels/qwen3-8b/tokenizer/eosToken');
    const badMarker = errorsOf(
      VALID.replace(
        'qwen3-8b: {model: Qwen/Qwen3-8B}',
        'qwen3-8b: {model: Qwen/Qwen3-8B, toolFormat: {user: "<u>", call: "<c>"}}',
      ),
    );
    expect(badMarker.map((e) => e.path)).toEqual(
      expect.arrayContaining(['/baseModels/qwen3-8b/toolFormat/assistant']),
    );
  });

  it('accepts a chat-template base model and names the fields of a bad one', () => {
    const hf = 'tokenizer: {type: hf, path: /m/tokenizer.json, eosToken: "<|im_end|>"}';
    const withModel = (entry: string) =>
      VALID.replace(
        'qwen3-8b: {model: Qwen/Qwen3-8B}',
        `qwen3-8b: {model: Qwen/Qwen3-8B, ${entry}}`,
      );
    const ok = parseOperatorConfig(
      withModel(
        `${hf}, chatFormat: {type: template, templateArgs: {enable_thinking: false}, ` +
          'systemPrompt: "Be brief."}',
      ),
    );
    if (!ok.ok) throw new Error(JSON.stringify(ok.errors));
    expect(ok.value.baseModels['qwen3-8b']?.chatFormat).toEqual({
      type: 'template',
      templateArgs: { enable_thinking: false },
      systemPrompt: 'Be brief.',
    });
    expect(errorsOf(withModel('chatFormat: {type: template}'))).toEqual([
      expect.objectContaining({
        path: '/baseModels/qwen3-8b/chatFormat',
        message: expect.stringMatching(/needs tokenizer \{type: hf/),
      }),
    ]);
    const both = errorsOf(
      withModel(
        `${hf}, chatFormat: {type: template}, toolFormat: {user: a, assistant: b, callStart: c, ` +
          'callEnd: d, resultStart: e, resultEnd: f, answer: g}',
      ),
    );
    expect(both.map((e) => e.path)).toEqual(['/baseModels/qwen3-8b/toolFormat']);
    expect(errorsOf(withModel('chatFormat: {type: jinja}')).map((e) => e.path)).toContain(
      '/baseModels/qwen3-8b/chatFormat/type',
    );
    expect(
      errorsOf(withModel(`${hf}, chatFormat: {type: template, templateArgs: {x: [1]}}`)).map(
        (e) => e.path,
      ),
    ).toContain('/baseModels/qwen3-8b/chatFormat/templateArgs/x');
  });

  it('names unknown tenants, duplicate hashes and bad defaults', () => {
    const text =
      VALID.replace('pool: gpu,', 'pool: cpu,') +
      `  - {name: bob, sha256: ${HASH}, role: viewer, tenant: nobody}\n`;
    const errs = errorsOf(text);
    expect(errs.map((e) => e.path)).toEqual([
      '/defaults/pool',
      '/tokens/1/tenant',
      '/tokens/1/sha256',
    ]);
    expect(errs[0]?.message).toBe("unknown pools name 'cpu' (declared: gpu)");
  });

  it('rejects bradley_terry on a tinker-type trainer, naming the field and line', () => {
    const errs = errorsOf(
      VALID.replace(
        'losses: [cross_entropy, importance_sampling]',
        'losses: [cross_entropy, bradley_terry]',
      ),
    );
    expect(errs).toEqual([
      {
        path: '/trainers/tinker/capabilities/losses',
        line: 8,
        message: expect.stringMatching(/type: tinker trainer cannot declare bradley_terry/),
      },
    ]);
  });

  it('rejects URLs where names belong and unknown keys', () => {
    const errs = errorsOf(VALID.replace('gpu: {slots: 2}', 'gpu: {slots: 2, url: "http://x"}'));
    expect(errs[0]).toMatchObject({ path: '/pools/gpu/url', line: 3 });
  });

  it('builds the local single-tenant config', () => {
    const config = localOperatorConfig(HASH);
    expect(Object.keys(config.tenants)).toEqual(['default']);
    expect(config.tokens[0]).toMatchObject({ role: 'operator', tenant: 'default', sha256: HASH });
    expect(config.defaults.trainer).toBe('embedded');
  });
});

describe('operator guardrail defaults', () => {
  it('default to the built-in rules with 3 rollbacks; rules are checked like a spec', () => {
    const result = parseOperatorConfig(VALID);
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(result.value.guardrails).toEqual({ maxRollbacks: 3 });
    const bad = errorsOf(
      `${VALID}guardrails:\n  rules:\n    - { metric: loss, when: spike, action: notify }\n`,
    );
    expect(bad).toEqual([
      expect.objectContaining({
        path: '/guardrails/rules/0/factor',
        message: 'required when `when` is spike',
      }),
    ]);
  });

  it('refuse a default rule or keepBest naming a metric no kind records, naming its path', () => {
    const rules = [
      '    - { metric: loss, when: nonFinite, action: rollback }',
      // recorded by grpo only: applies to grpo runs, not refused
      '    - { metric: advantage/abs_max, when: nonFinite, action: rollback }',
      '    - { metric: grad_nrom, when: above, value: 100, action: pause }',
    ].join('\n');
    const bad = errorsOf(
      `${VALID.replace('baseModel: qwen3-8b}', 'baseModel: qwen3-8b, checkpointRetention: {keepBest: {metric: acuracy, count: 2, order: max}}}')}` +
        `guardrails:\n  rules:\n${rules}\n`,
    );
    expect(bad).toEqual([
      expect.objectContaining({
        path: '/guardrails/rules/2/metric',
        message: "'grad_nrom' is not a step metric any run kind records",
      }),
      expect.objectContaining({
        path: '/defaults/checkpointRetention/keepBest/metric',
        message: "'acuracy' is not a step metric any run kind records",
      }),
    ]);
    const good = parseOperatorConfig(
      `${VALID}guardrails:\n  rules:\n${rules.split('\n').slice(0, 2).join('\n')}\n`,
    );
    expect(good.ok).toBe(true);
  });
});
