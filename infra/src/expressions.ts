// Every PromQL expression Anneal ships: dashboard queries and variables, recording and alert
// rules, KEDA triggers. Read from the files on disk (what Grafana, Prometheus and KEDA load), so
// tests can check them statically and a full-stack test can evaluate each one against a live
// Prometheus (`expandGrafanaVariables` first for dashboard queries).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import type { GrafanaDashboard } from './grafana/panels.ts';
import { DASHBOARDS_DIR, K8S_DIR, PROMETHEUS_RULES_DIR } from './paths.ts';
import { labelValuesMetric, seriesNamesIn } from './promql.ts';

export type ExpressionKind = 'dashboard' | 'dashboard-variable' | 'recording' | 'alert' | 'keda';

export interface PromExpression {
  kind: ExpressionKind;
  /** Where it is defined, e.g. `anneal-run.json panel 10 "Train–inference KL" query A`. */
  origin: string;
  /** The expression as written (dashboard ones may contain Grafana variables). */
  expr: string;
  /** Selects vLLM series, which exist only when a vLLM server is scraped. */
  vllm: boolean;
  /** Selects a run's fair share of a vLLM endpoint (`anneal_run_fleet_*`), which only runs on an
   * endpoint declaring `maxNumSeqs` have. */
  fleetShare: boolean;
  /** Set for recording rules: the series name it records. */
  record?: string;
}

const yamlFiles = (dir: string) =>
  readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()
    .map((f) => path.join(dir, f));

const usesVllm = (expr: string) => seriesNamesIn(expr).some((n) => n.startsWith('vllm:'));
const usesFleetShare = (expr: string) =>
  seriesNamesIn(expr).some((n) => n.startsWith('anneal_run_fleet_'));

/** Whether `expr` selects per-cell eval gauges (anneal_run_eval_*), which only an eval run has:
 * tests that evaluate it pick an eval run's id for $run_id. */
export const selectsEvalCells = (expr: string) =>
  seriesNamesIn(expr).some((n) => n.startsWith('anneal_run_eval_'));

export function readDashboards(dir = DASHBOARDS_DIR): Map<string, GrafanaDashboard> {
  const out = new Map<string, GrafanaDashboard>();
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    out.set(file, JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as GrafanaDashboard);
  }
  return out;
}

export function dashboardExpressions(dir = DASHBOARDS_DIR): PromExpression[] {
  const out: PromExpression[] = [];
  for (const [file, board] of readDashboards(dir)) {
    for (const v of board.templating.list) {
      const expr = labelValuesMetric(v.definition);
      out.push({
        kind: 'dashboard-variable',
        origin: `${file} variable $${v.name}`,
        expr,
        vllm: usesVllm(expr),
        fleetShare: usesFleetShare(expr),
      });
    }
    for (const panel of board.panels) {
      for (const target of panel.targets ?? []) {
        out.push({
          kind: 'dashboard',
          origin: `${file} panel ${panel.id} "${panel.title}" query ${target.refId}`,
          expr: target.expr,
          vllm: usesVllm(target.expr),
          fleetShare: usesFleetShare(target.expr),
        });
      }
    }
  }
  return out;
}

interface RuleFile {
  groups: { name: string; rules: { record?: string; alert?: string; expr: string }[] }[];
}

export function ruleExpressions(dir = PROMETHEUS_RULES_DIR): PromExpression[] {
  const out: PromExpression[] = [];
  for (const file of yamlFiles(dir)) {
    const doc = parse(readFileSync(file, 'utf8')) as RuleFile;
    for (const group of doc.groups) {
      for (const rule of group.rules) {
        const name = rule.record ?? rule.alert ?? '?';
        const origin = `${path.basename(file)} group ${group.name} ${rule.record ? 'record' : 'alert'} ${name}`;
        const expr = rule.expr.trim();
        out.push({
          kind: rule.record ? 'recording' : 'alert',
          origin,
          expr,
          vllm: usesVllm(expr),
          fleetShare: usesFleetShare(expr),
          ...(rule.record ? { record: rule.record } : {}),
        });
      }
    }
  }
  return out;
}

interface ScaledObject {
  kind?: string;
  metadata?: { name?: string };
  spec?: { triggers?: { type: string; metadata?: { query?: string } }[] };
}

export function kedaExpressions(dir = K8S_DIR): PromExpression[] {
  const out: PromExpression[] = [];
  for (const file of yamlFiles(dir)) {
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      const object = doc.toJS() as ScaledObject | null;
      if (object?.kind !== 'ScaledObject') continue;
      for (const trigger of object.spec?.triggers ?? []) {
        const query = trigger.metadata?.query;
        if (trigger.type !== 'prometheus' || !query) continue;
        const origin = `${path.basename(file)} ScaledObject ${object.metadata?.name ?? '?'}`;
        out.push({
          kind: 'keda',
          origin,
          expr: query.trim(),
          vllm: usesVllm(query),
          fleetShare: usesFleetShare(query),
        });
      }
    }
  }
  return out;
}

/** Every expression of every dashboard, rule file and KEDA trigger. */
export function listExpressions(): PromExpression[] {
  return [...dashboardExpressions(), ...ruleExpressions(), ...kedaExpressions()];
}
