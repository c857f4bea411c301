// promtool check config / check rules / test rules, plus cross-checks of the rule files.
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ruleExpressions } from '../src/expressions.ts';
import { unknownSeriesReason } from '../src/known-series.ts';
import { PROMETHEUS_DIR, PROMETHEUS_RULES_DIR, PROMETHEUS_TESTS_DIR } from '../src/paths.ts';
import { assertPromtool, promtool } from '../src/promtool.ts';
import { seriesNamesIn } from '../src/promql.ts';

const scratch: string[] = [];

beforeAll(() => {
  assertPromtool();
});

afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

const expectSuccess = (result: { ok: boolean; output: string }) => {
  expect(result.ok, result.output).toBe(true);
};

describe('promtool', () => {
  it('accepts the docker compose scrape config and its rule files', () => {
    const result = promtool(['check', 'config', 'prometheus.yml'], PROMETHEUS_DIR);
    expectSuccess(result);
    expect(result.output).toMatch(/2 rule files found/);
  });

  it('accepts the Kubernetes scrape config (Kubernetes SD swapped out if this promtool lacks it)', () => {
    const direct = promtool(['check', 'config', 'prometheus.k8s.yml'], PROMETHEUS_DIR);
    if (direct.ok) return;
    // Debian builds Prometheus without Kubernetes service discovery; everything else in the
    // file (relabelling regexes, rule files) is still checked through a static stand-in.
    expect(direct.output).toMatch(/field kubernetes_sd_configs not found/);
    const config = parse(readFileSync(path.join(PROMETHEUS_DIR, 'prometheus.k8s.yml'), 'utf8'));
    for (const job of config.scrape_configs) {
      expect(job.kubernetes_sd_configs?.[0]?.role).toBe('pod');
      delete job.kubernetes_sd_configs;
      job.static_configs = [{ targets: ['stand-in:9464'] }];
    }
    const dir = mkdtempSync(path.join(tmpdir(), 'anneal-k8s-prom-'));
    scratch.push(dir);
    mkdirSync(path.join(dir, 'rules'));
    for (const f of readdirSync(PROMETHEUS_RULES_DIR)) {
      copyFileSync(path.join(PROMETHEUS_RULES_DIR, f), path.join(dir, 'rules', f));
    }
    writeFileSync(path.join(dir, 'prometheus.yml'), stringify(config));
    const result = promtool(['check', 'config', 'prometheus.yml'], dir);
    expectSuccess(result);
    expect(result.output).toMatch(/2 rule files found/);
  });

  it('accepts the rule files', () => {
    const files = readdirSync(PROMETHEUS_RULES_DIR).map((f) => path.join('rules', f));
    expectSuccess(promtool(['check', 'rules', ...files], PROMETHEUS_DIR));
  });

  it('passes the alert unit tests (promtool test rules)', () => {
    const files = readdirSync(PROMETHEUS_TESTS_DIR).filter((f) => f.endsWith('.yml'));
    expect(files.length).toBeGreaterThanOrEqual(6);
    const result = promtool(['test', 'rules', ...files], PROMETHEUS_TESTS_DIR);
    expectSuccess(result);
    expect(result.output).not.toMatch(/FAILED/);
  });
});

interface AlertTest {
  alertname: string;
  exp_alerts: unknown[];
}

describe('alert rules', () => {
  const alerts = ruleExpressions().filter((r) => r.kind === 'alert');
  const tests: AlertTest[] = readdirSync(PROMETHEUS_TESTS_DIR).flatMap((f) => {
    const doc = parse(readFileSync(path.join(PROMETHEUS_TESTS_DIR, f), 'utf8'));
    return (doc.tests as { alert_rule_test?: AlertTest[] }[]).flatMap(
      (t) => t.alert_rule_test ?? [],
    );
  });

  it('cover the documented alerts and recording rules', () => {
    expect(alerts.map((a) => a.origin.split(' ').pop()).sort()).toEqual([
      'AnnealGradNormSpike',
      'AnnealGuardrailFired',
      'AnnealPoolWaitHigh',
      'AnnealRewardCollapse',
      'AnnealRunStalled',
      'AnnealTrainInferenceKLHigh',
      'AnnealWorkerHeartbeatLost',
    ]);
  });

  it.each(alerts.map((a) => [a.origin.split(' ').pop() ?? '']))(
    '%s has a firing and a not-firing unit test',
    (name) => {
      const mine = tests.filter((t) => t.alertname === name);
      expect(
        mine.some((t) => t.exp_alerts.length > 0),
        `${name}: no firing case`,
      ).toBe(true);
      expect(
        mine.some((t) => t.exp_alerts.length === 0),
        `${name}: no silent case`,
      ).toBe(true);
    },
  );

  it('select only catalogue metrics, recording rules and up', () => {
    const problems = ruleExpressions().flatMap((r) =>
      seriesNamesIn(r.expr).flatMap((name) => {
        const reason = unknownSeriesReason(name);
        return reason ? [`${r.origin}: ${reason}`] : [];
      }),
    );
    expect(problems).toEqual([]);
  });

  it('recording rules follow level:metric:operations and read only raw series', () => {
    for (const r of ruleExpressions().filter((e) => e.kind === 'recording')) {
      expect(r.record).toMatch(/^[a-z_]+:anneal_[a-z0-9_]+:[a-z0-9_]+$/);
      for (const name of seriesNamesIn(r.expr)) expect(name, r.origin).toMatch(/^anneal_/);
    }
  });
});
