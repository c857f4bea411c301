// Grafana dashboards: generated files in sync, valid structure, known series, PromQL that parses.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { EVAL_CELL_SERIES, STEP_METRICS, STEP_SECTIONS, type StepSeries } from '@anneal/telemetry';
import { beforeAll, describe, expect, it } from 'vitest';
import { dashboardExpressions, kedaExpressions, readDashboards } from '../src/expressions.ts';
import { EVALUATION_ROW } from '../src/grafana/dashboards/evaluation.ts';
import { DATASOURCE_UID } from '../src/grafana/panels.ts';
import { renderDashboards } from '../src/grafana/render.ts';
import { unknownSeriesReason } from '../src/known-series.ts';
import { checkExpressionsParse } from '../src/parse-check.ts';
import { DASHBOARDS_DIR } from '../src/paths.ts';
import { assertPromtool } from '../src/promtool.ts';
import { expandGrafanaVariables, GRAFANA_INTERVALS, seriesNamesIn } from '../src/promql.ts';

const boards = readDashboards();

describe('dashboard files', () => {
  it('are exactly what the generator renders (npm run gen:dashboards -w @anneal/infra)', () => {
    const rendered = renderDashboards();
    expect(readdirSync(DASHBOARDS_DIR).sort()).toEqual([...rendered.keys()].sort());
    for (const [file, content] of rendered) {
      expect(readFileSync(path.join(DASHBOARDS_DIR, file), 'utf8'), file).toBe(content);
    }
  });

  it('are the four documented in docs/observability.md, each with a unique uid', () => {
    const titles = [...boards.values()].map((b) => b.title).sort();
    expect(titles).toEqual([
      'Anneal / Control plane',
      'Anneal / Inference (vLLM)',
      'Anneal / Pools & workers',
      'Anneal / Run',
    ]);
    const uids = [...boards.values()].map((b) => b.uid);
    expect(new Set(uids).size).toBe(uids.length);
  });

  it.each([...boards.keys()])(
    '%s: valid JSON with unique panel ids and non-overlapping grid',
    (file) => {
      const raw = readFileSync(path.join(DASHBOARDS_DIR, file), 'utf8');
      expect(() => JSON.parse(raw)).not.toThrow();
      const board = boards.get(file)!;
      const ids = board.panels.map((p) => p.id);
      expect(new Set(ids).size, 'duplicate panel id').toBe(ids.length);
      const cells = new Set<string>();
      for (const p of board.panels) {
        const { x, y, w, h } = p.gridPos;
        expect(x + w, `${p.title} exceeds 24 columns`).toBeLessThanOrEqual(24);
        for (let i = x; i < x + w; i++) {
          for (let j = y; j < y + h; j++) {
            expect(cells.has(`${i},${j}`), `${p.title} overlaps another panel`).toBe(false);
            cells.add(`${i},${j}`);
          }
        }
      }
    },
  );

  it.each([...boards.keys()])(
    '%s: every panel and query uses the anneal-prometheus datasource',
    (file) => {
      const board = boards.get(file)!;
      for (const p of board.panels) {
        expect(p.datasource?.uid, p.title).toBe(DATASOURCE_UID);
        if (p.type === 'row') continue; // a row header groups the panels after it
        expect(p.targets.length, `${p.title} has no query`).toBeGreaterThan(0);
        for (const t of p.targets)
          expect(t.datasource?.uid, `${p.title} ${t.refId}`).toBe(DATASOURCE_UID);
      }
      for (const v of board.templating.list) expect(v.datasource.uid).toBe(DATASOURCE_UID);
    },
  );

  it.each([...boards.keys()])('%s: queries use only variables the dashboard defines', (file) => {
    const board = boards.get(file)!;
    const defined = new Set([
      ...board.templating.list.map((v) => v.name),
      ...Object.keys(GRAFANA_INTERVALS),
    ]);
    for (const p of board.panels) {
      for (const t of p.targets) {
        for (const [, name] of t.expr.matchAll(/\$\{?(\w+)/g)) {
          expect(defined.has(name!), `${p.title}: $${name} is not defined`).toBe(true);
        }
      }
    }
  });

  it('the Run dashboard is selected by run_id and shows every per-run series family', () => {
    const run = [...boards.values()].find((b) => b.uid === 'anneal-run')!;
    expect(run.templating.list.map((v) => v.name)).toEqual(['run_id']);
    const selected = new Set(
      run.panels.flatMap((p) => p.targets.flatMap((t) => seriesNamesIn(t.expr))),
    );
    // every step series of the table, raw or through the recording rule its row names
    for (const row of Object.values(STEP_METRICS)) {
      const series = (row as { series?: StepSeries }).series;
      if (series) expect(selected, series.name).toContain(series.recorded ?? series.name);
    }
    for (const needed of [
      'anneal_run_step',
      'anneal_run_last_step_timestamp_seconds',
      'run_id:anneal_run_grad_norm:zscore1h',
    ]) {
      expect(selected, needed).toContain(needed);
    }
    for (const p of run.panels) {
      for (const t of p.targets) expect(t.expr, p.title).toContain('run_id="$run_id"');
    }
  });

  it('the Run dashboard has one row per section, each holding its section’s panels', () => {
    const run = [...boards.values()].find((b) => b.uid === 'anneal-run')!;
    const rows = run.panels.filter((p) => p.type === 'row');
    expect(rows.map((r) => r.title)).toEqual([...Object.values(STEP_SECTIONS), EVALUATION_ROW]);
    const reward = rows.find((r) => r.title === STEP_SECTIONS.reward)!;
    const next = rows[rows.indexOf(reward) + 1]!;
    const inReward = run.panels
      .filter((p) => p.gridPos.y > reward.gridPos.y && p.gridPos.y < next.gridPos.y)
      .map((p) => p.title);
    expect(inReward).toContain('Preference score');
    expect(inReward).not.toContain('Train–inference KL');
  });

  it('the Run dashboard ends with the Evaluation row: eval cells against the budget b', () => {
    const run = [...boards.values()].find((b) => b.uid === 'anneal-run')!;
    const row = run.panels.find((p) => p.type === 'row' && p.title === EVALUATION_ROW)!;
    const panels = run.panels.filter((p) => p.gridPos.y > row.gridPos.y);
    expect(panels.map((p) => [p.type, p.title])).toEqual([
      ['trend', 'Accuracy vs tool-call budget'],
      ['xychart', 'Cost vs accuracy'],
      ['trend', 'Broken tool-call rate vs budget'],
      ['table', 'Eval cells'],
    ]);
    for (const p of panels) {
      for (const t of p.targets) {
        // the latest value of every cell, as a table: one row per (checkpoint, budget)
        expect(t, p.title).toMatchObject({ instant: true, range: false, format: 'table' });
        expect(t.expr, p.title).toMatch(
          /^max by \(checkpoint, budget\) \(anneal_run_eval_\w+\{run_id="\$run_id"\}\)$/,
        );
      }
    }
    const selected = new Set(
      panels.flatMap((p) => p.targets.flatMap((t) => seriesNamesIn(t.expr))),
    );
    expect([...selected].sort()).toEqual(
      EVAL_CELL_SERIES.map((s) => s.name)
        // a win rate needs a reward model: in the series, not on the dashboard
        .filter((n) => n !== 'anneal_run_eval_preference_win_ratio')
        .sort(),
    );
    // a trend panel draws over its numeric x field: the pivot's budget column
    const accuracy = panels[0]!;
    expect(accuracy.options['xField']).toBe('budget\\checkpoint');
    expect(accuracy.transformations?.map((t) => t.id)).toEqual([
      'groupingToMatrix',
      'convertFieldType',
      'sortBy',
      'renameByRegex',
    ]);
  });
});

describe('dashboard and KEDA expressions', () => {
  const expressions = [...dashboardExpressions(), ...kedaExpressions()];

  it('select only catalogue metrics, recording rules, vllm:* and up', () => {
    const problems = expressions.flatMap((e) =>
      seriesNamesIn(e.expr).flatMap((name) => {
        const reason = unknownSeriesReason(name);
        return reason ? [`${e.origin}: ${reason}`] : [];
      }),
    );
    expect(problems).toEqual([]);
  });

  it('each select at least one series', () => {
    for (const e of expressions) expect(seriesNamesIn(e.expr).length, e.origin).toBeGreaterThan(0);
  });

  describe('parse (promtool)', () => {
    beforeAll(() => {
      assertPromtool();
    });

    it('every expression parses once Grafana variables are expanded', () => {
      const values = { run_id: 'run_01HZX0000000000000000000', pool: '.*', model_name: '.*' };
      const expanded = new Map(
        expressions.map((e) => [e.origin, expandGrafanaVariables(e.expr, values)]),
      );
      const result = checkExpressionsParse(expanded);
      expect(result.ok, result.output).toBe(true);
      expect(result.output).toContain(`SUCCESS: ${expanded.size} rules found`);
    });

    it('a broken expression is reported with its origin', () => {
      const result = checkExpressionsParse(new Map([['broken panel 7', 'sum(rate(x[5m])']]));
      expect(result.ok).toBe(false);
      expect(result.output).toContain('broken panel 7');
    });
  });
});
