import { describe, expect, it } from 'vitest';
import { parseRunSpec } from './index.ts';
import { BUILT_IN_GUARDRAILS, guardrailPolicy } from './guardrails.ts';

const grpo = (guardrails: string) => `kind: grpo\nguardrails: ${guardrails}`;

describe('guardrails in the run spec', () => {
  it('defaults: the operator defaults on, no rules of its own', () => {
    const parsed = parseRunSpec('kind: grpo');
    expect(parsed.ok && parsed.value.kind === 'grpo' && parsed.value.guardrails).toEqual({
      defaults: true,
      rules: [],
    });
  });

  it('names the field of each bad combination', () => {
    const parsed = parseRunSpec(
      grpo(
        '{ rules: [' +
          '{ metric: loss, when: above, action: stop },' +
          '{ metric: grad_norm, when: spike, value: 3, action: notify },' +
          '{ metric: loss, when: nonFinite, action: notify },' +
          '{ metric: loss, when: below, value: 0, action: stop, learningRateScale: 0.5 },' +
          '{ name: dup, metric: loss, when: above, value: 1, action: stop },' +
          '{ name: dup, metric: loss, when: above, value: 2, action: stop }' +
          '] }',
      ),
    );
    expect(parsed.ok).toBe(false);
    const paths = parsed.ok ? [] : parsed.errors.map((e) => e.path);
    expect(paths).toEqual([
      '/guardrails/rules/0/value',
      '/guardrails/rules/1/value',
      '/guardrails/rules/1/factor',
      '/guardrails/rules/2/action',
      '/guardrails/rules/3/learningRateScale',
      '/guardrails/rules/5/name',
    ]);
  });

  it('refuses a rule or keepBest naming a metric the kind does not record', () => {
    const parsed = parseRunSpec(
      'kind: sft\ncheckpointRetention: {keepBest: {metric: reward/all}}\n' +
        'guardrails: { rules: [{ metric: grad_norm, when: nonFinite, action: stop },' +
        ' { metric: advantage/abs_max, when: nonFinite, action: stop }] }',
    );
    expect(parsed.ok ? [] : parsed.errors).toEqual([
      {
        path: '/guardrails/rules/1/metric',
        message: expect.stringMatching(
          /^'advantage\/abs_max' is not a step metric of sft runs \(known: .*grad_norm/,
        ),
        line: 3,
      },
      {
        path: '/checkpointRetention/keepBest/metric',
        message: expect.stringMatching(/^'reward\/all' is not a step metric of sft runs/),
        line: 2,
      },
    ]);
    expect(
      parseRunSpec(
        grpo('{ rules: [{ metric: advantage/abs_max, when: nonFinite, action: stop }] }'),
      ).ok,
    ).toBe(true);
  });

  it('refuses a multi-step rule on mismatch_kl when a pipelined run probes every k > 1 steps', () => {
    const rules =
      'guardrails: { rules: [{ metric: mismatch_kl, when: above, value: 0.1, forSteps: 2, action: stop },' +
      ' { metric: mismatch_kl, when: spike, factor: 5, action: notify }] }';
    const sparse = parseRunSpec(
      `kind: grpo\nrollout: { maxPolicyLag: 1, probeEvery: 4 }\n${rules}`,
    );
    expect(sparse.ok ? [] : sparse.errors).toEqual([
      {
        path: '/guardrails/rules/0/forSteps',
        message: expect.stringMatching(
          /^mismatch_kl is recorded every 4 steps \(rollout.probeEvery\)/,
        ),
        line: 3,
      },
    ]);
    // every step measured: on-policy, or probed at every lagged step
    expect(
      parseRunSpec(`kind: grpo\nrollout: { maxPolicyLag: 0, probeEvery: 4 }\n${rules}`).ok,
    ).toBe(true);
    expect(parseRunSpec(`kind: grpo\nrollout: { maxPolicyLag: 1 }\n${rules}`).ok).toBe(true);
  });

  it('refuses an unknown action by schema', () => {
    const parsed = parseRunSpec(
      grpo('{ rules: [{ metric: loss, when: above, value: 1, action: panic }] }'),
    );
    expect(parsed.ok ? [] : parsed.errors.map((e) => e.path)).toContain(
      '/guardrails/rules/0/action',
    );
  });
});

describe('guardrailPolicy', () => {
  const operator = { maxRollbacks: 3 };
  const all = () => true;

  it('built-in defaults first, then the spec rules; a same-named spec rule replaces a default', () => {
    const policy = guardrailPolicy(
      {
        defaults: true,
        rules: [
          {
            name: 'nonfinite-loss',
            metric: 'loss',
            when: 'nonFinite',
            forSteps: 1,
            action: 'stop',
          },
          {
            metric: 'train_inference_kl',
            when: 'above',
            value: 0.5,
            forSteps: 2,
            action: 'rollback',
          },
        ],
      },
      operator,
      all,
    );
    expect(policy.rules.map((r) => [r.name, r.action, r.origin])).toEqual([
      ['nonfinite-grad-norm', 'rollback', 'operator'],
      ['nonfinite-advantages', 'rollback', 'operator'],
      ['nonfinite-loss', 'stop', 'spec'],
      ['train-inference-kl-above', 'rollback', 'spec'],
    ]);
    expect(policy.maxRollbacks).toBe(3);
  });

  it('leaves out defaults on metrics the kind does not record, and all of them when turned off', () => {
    const sft = guardrailPolicy(
      { defaults: true, rules: [] },
      operator,
      (m) => m !== 'advantage/abs_max',
    );
    expect(sft.rules.map((r) => r.name)).toEqual(['nonfinite-loss', 'nonfinite-grad-norm']);
    const off = guardrailPolicy({ defaults: false, rules: [], maxRollbacks: 1 }, operator, all);
    expect(off).toEqual({ rules: [], maxRollbacks: 1 });
  });

  it("the operator config's rules replace the built-in ones", () => {
    const rules = [
      BUILT_IN_GUARDRAILS[0]!,
      { ...BUILT_IN_GUARDRAILS[1]!, action: 'stop' as const },
    ];
    const policy = guardrailPolicy({ defaults: true, rules: [] }, { rules, maxRollbacks: 0 }, all);
    expect(policy.rules.map((r) => `${r.name}:${r.action}`)).toEqual([
      'nonfinite-loss:rollback',
      'nonfinite-grad-norm:stop',
    ]);
  });
});
