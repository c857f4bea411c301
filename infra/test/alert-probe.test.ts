import { describe, expect, it } from 'vitest';
import { alertProbe } from '../src/alert-probe.ts';
import { ruleExpressions } from '../src/expressions.ts';
import { checkExpressionsParse } from '../src/parse-check.ts';

describe('alertProbe', () => {
  it('turns comparisons into bool form and leaves matchers, strings and ranges alone', () => {
    expect(alertProbe('time() - max by (run_id) (x{a!="b",c=~"d>e"}) > 900')).toBe(
      'time() - max by (run_id) (x{a!="b",c=~"d>e"}) > bool 900',
    );
    expect(alertProbe('(a > 0.01) and on (run_id) (b[10m] >= 5) or (up == 0)')).toBe(
      '(a > bool 0.01) and on (run_id) (b[10m] >= bool 5) or (up == bool 0)',
    );
    expect(alertProbe('a < bool 2')).toBe('a < bool 2');
  });

  it('drops offset modifiers but keeps the windows', () => {
    expect(alertProbe('avg_over_time(x[1h] offset 15m) < 0.5 * avg_over_time(x[15m])')).toBe(
      'avg_over_time(x[1h] ) < bool 0.5 * avg_over_time(x[15m])',
    );
  });

  it('gives a valid PromQL probe for every shipped alert', () => {
    const alerts = ruleExpressions().filter((e) => e.kind === 'alert');
    expect(alerts.length).toBeGreaterThanOrEqual(6);
    const probes = alerts.map((a) => ({ ...a, expr: alertProbe(a.expr) }));
    for (const probe of probes) {
      expect(probe.expr, probe.origin).not.toMatch(/\boffset\b/);
      expect(probe.expr.match(/[<>=!]=?\s+bool\b/g)?.length ?? 0, probe.origin).toBeGreaterThan(0);
    }
    const result = checkExpressionsParse(new Map(probes.map((p) => [p.origin, p.expr])));
    expect(result.output).toContain('SUCCESS');
    expect(result.ok, result.output).toBe(true);
  });
});
