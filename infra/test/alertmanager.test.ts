// Alert delivery: Prometheus (compose and Kubernetes configs) sends alerts to an Alertmanager,
// and infra/alertmanager/alertmanager.yml routes them to a receiver. Structural checks only —
// CI has no amtool (Debian's prometheus package ships promtool alone).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { durationSeconds, loadCompose } from '../src/deploy.ts';
import { ruleExpressions } from '../src/expressions.ts';
import {
  INFRA_DIR,
  PROMETHEUS_DIR,
  PROMETHEUS_RULES_DIR,
  PROMETHEUS_TESTS_DIR,
} from '../src/paths.ts';

interface Route {
  receiver?: string;
  group_by?: string[];
  group_wait?: string;
  group_interval?: string;
  repeat_interval?: string;
  matchers?: string[];
  routes?: Route[];
}
interface Receiver {
  name: string;
  [config: string]: unknown;
}
interface AlertmanagerConfig {
  route: Route;
  receivers: Receiver[];
}

const ALERTMANAGER_DIR = path.join(INFRA_DIR, 'alertmanager');
const config = parse(
  readFileSync(path.join(ALERTMANAGER_DIR, 'alertmanager.yml'), 'utf8'),
) as AlertmanagerConfig;
const compose = loadCompose();
const promConfig = (file: string) =>
  parse(readFileSync(path.join(PROMETHEUS_DIR, file), 'utf8')) as {
    alerting?: { alertmanagers?: { static_configs?: { targets: string[] }[] }[] };
  };
const alertmanagerTargets = (file: string) =>
  (promConfig(file).alerting?.alertmanagers ?? []).flatMap((a) =>
    (a.static_configs ?? []).flatMap((s) => s.targets),
  );

/** Every route of the tree, the root first. */
const allRoutes = (route: Route): Route[] => [route, ...(route.routes ?? []).flatMap(allRoutes)];

/** Label names the shipped alerts can carry: rule labels and those in their unit tests. */
function alertLabelNames(): Set<string> {
  const names = new Set(['alertname']);
  const rules = parse(readFileSync(path.join(PROMETHEUS_RULES_DIR, 'anneal-alerts.yml'), 'utf8'))
    .groups as { rules: { labels?: Record<string, string> }[] }[];
  for (const r of rules.flatMap((g) => g.rules)) {
    for (const l of Object.keys(r.labels ?? {})) names.add(l);
  }
  for (const f of readdirSync(PROMETHEUS_TESTS_DIR)) {
    const doc = parse(readFileSync(path.join(PROMETHEUS_TESTS_DIR, f), 'utf8')) as {
      tests: { alert_rule_test?: { exp_alerts: { exp_labels: Record<string, string> }[] }[] }[];
    };
    for (const t of doc.tests.flatMap((x) => x.alert_rule_test ?? [])) {
      for (const a of t.exp_alerts) for (const l of Object.keys(a.exp_labels)) names.add(l);
    }
  }
  return names;
}

describe('alert delivery', () => {
  it('compose: Prometheus sends alerts to the alertmanager service, which loads the shipped config', () => {
    const service = compose.services['alertmanager'];
    expect(service?.image).toMatch(/^prom\/alertmanager:v\d+\.\d+\.\d+$/);
    expect(alertmanagerTargets('prometheus.yml')).toEqual(['alertmanager:9093']);
    expect(service?.volumes).toContain('./infra/alertmanager:/etc/alertmanager:ro');
    expect(service?.command).toContain('--config.file=/etc/alertmanager/alertmanager.yml');
    expect(existsSync(path.join(ALERTMANAGER_DIR, 'alertmanager.yml'))).toBe(true);
    // its state (silences, notification log) survives restarts
    const storage = service?.command?.find((c) => c.startsWith('--storage.path='));
    const volume = service?.volumes?.find((v) => v.split(':')[1] === storage?.split('=')[1]);
    expect(volume && compose.volumes && volume.split(':')[0]! in compose.volumes).toBe(true);
    expect(service?.ports).toEqual(['127.0.0.1:9093:9093']);
  });

  it('Kubernetes: Prometheus has an Alertmanager to send to', () => {
    const targets = alertmanagerTargets('prometheus.k8s.yml');
    expect(targets.length).toBeGreaterThan(0);
    for (const t of targets) expect(t).toMatch(/^[a-z0-9.-]+:\d+$/);
  });

  it('routes every alert to a receiver that exists and delivers somewhere', () => {
    const names = config.receivers.map((r) => r.name);
    expect(new Set(names).size).toBe(names.length);
    expect(config.route.receiver, 'the root route needs a default receiver').toBeDefined();
    for (const route of allRoutes(config.route)) {
      if (route.receiver !== undefined) expect(names).toContain(route.receiver);
    }
    for (const receiver of config.receivers) {
      const integrations = Object.entries(receiver).filter(([k]) => k.endsWith('_configs'));
      expect(integrations.length, receiver.name).toBeGreaterThan(0);
      const webhooks = (receiver['webhook_configs'] ?? []) as { url?: string }[];
      for (const w of webhooks) expect(() => new URL(w.url ?? ''), receiver.name).not.toThrow();
    }
  });

  it('groups by labels the alerts carry, with sane timings', () => {
    const labels = alertLabelNames();
    expect(config.route.group_by).toContain('alertname');
    for (const l of config.route.group_by ?? []) expect(labels, `group_by ${l}`).toContain(l);
    const wait = durationSeconds(config.route.group_wait!);
    const interval = durationSeconds(config.route.group_interval!);
    expect(wait).toBeLessThanOrEqual(60);
    expect(interval).toBeGreaterThanOrEqual(wait);
    for (const route of allRoutes(config.route)) {
      const repeat = durationSeconds(route.repeat_interval ?? config.route.repeat_interval!);
      expect(repeat).toBeGreaterThanOrEqual(interval);
    }
  });

  it('sub-routes match label values the alerts actually have', () => {
    const severities = new Set(
      (
        parse(readFileSync(path.join(PROMETHEUS_RULES_DIR, 'anneal-alerts.yml'), 'utf8'))
          .groups as { rules: { labels?: Record<string, string> }[] }[]
      )
        .flatMap((g) => g.rules)
        .map((r) => r.labels?.['severity']),
    );
    const alertNames = new Set(
      ruleExpressions()
        .filter((r) => r.kind === 'alert')
        .map((r) => r.origin.split(' ').pop()),
    );
    for (const route of allRoutes(config.route).slice(1)) {
      expect(route.matchers?.length, 'sub-routes select something').toBeGreaterThan(0);
      for (const m of route.matchers ?? []) {
        const match = /^(\w+)\s*=\s*"([^"]*)"$/.exec(m);
        expect(match, `matcher ${m}`).not.toBeNull();
        const [, label, value] = match!;
        if (label === 'severity') expect(severities).toContain(value);
        else if (label === 'alertname') expect(alertNames).toContain(value);
        else expect(alertLabelNames()).toContain(label);
      }
    }
  });
});
