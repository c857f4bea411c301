// The operator docs stay in step with the alerts and dashboards they describe.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readDashboards } from '../src/expressions.ts';
import { PROMETHEUS_RULES_DIR, REPO_ROOT } from '../src/paths.ts';

const operations = readFileSync(path.join(REPO_ROOT, 'docs/operations.md'), 'utf8');
const observability = readFileSync(path.join(REPO_ROOT, 'docs/observability.md'), 'utf8');
const alerts = (
  parse(readFileSync(path.join(PROMETHEUS_RULES_DIR, 'anneal-alerts.yml'), 'utf8')) as {
    groups: { rules: { alert: string; annotations: Record<string, string> }[] }[];
  }
).groups.flatMap((g) => g.rules);

describe('docs/operations.md', () => {
  it.each(alerts.map((a) => [a.alert, a] as const))(
    'has the runbook section %s links to',
    (name, alert) => {
      const [file, anchor] = alert.annotations['runbook_url']!.split('#');
      expect(file).toBe('docs/operations.md');
      const at = operations.indexOf(`<a id="${anchor}"></a>`);
      expect(at, `anchor ${anchor}`).toBeGreaterThan(0);
      const section = operations.slice(at, at + 200);
      expect(section).toContain(`### ${name}`);
      const body = operations.slice(at).split(/\n<a id=/)[0]!;
      expect(body).toMatch(/\*\*Meaning\*\*/);
      expect(body).toMatch(/\*\*What to do\*\*/);
    },
  );

  it('covers Redis, pools, scaling and draining, endpoints and upgrades', () => {
    for (const heading of [
      '## Redis: persistence and sizing',
      '### Adding a pool',
      '## Scaling and draining workers',
      '## Registering inference and trainer endpoints',
      '## Upgrading',
      '## Alert runbook',
    ]) {
      expect(operations).toContain(heading);
    }
  });
});

describe('docs/observability.md', () => {
  it('describes every dashboard', () => {
    for (const board of readDashboards().values())
      expect(observability).toContain(`**${board.title}**`);
  });
});
