import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { localPrometheusConfig } from '../src/local-prometheus.ts';
import { assertPromtool, promtool } from '../src/promtool.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'anneal-local-prom-'));
beforeAll(() => {
  assertPromtool();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('localPrometheusConfig', () => {
  const text = localPrometheusConfig({
    'anneal-control-plane': ['127.0.0.1:18080'],
    'anneal-worker': ['127.0.0.1:19464', '127.0.0.1:19465'],
  });
  const config = parse(text);

  it('keeps the job names the rules and dashboards select on, with static targets', () => {
    expect(config.scrape_configs.map((j: { job_name: string }) => j.job_name)).toEqual([
      'anneal-control-plane',
      'anneal-worker',
    ]);
    const worker = config.scrape_configs[1];
    expect(worker.static_configs).toEqual([{ targets: ['127.0.0.1:19464', '127.0.0.1:19465'] }]);
    expect(worker.dns_sd_configs).toBeUndefined();
    expect(worker.metrics_path).toBe('/metrics');
    expect(config.global.scrape_interval).toBe('1s');
  });

  it('is a valid config that loads the rule files', () => {
    const file = path.join(dir, 'prometheus.yml');
    writeFileSync(file, text);
    const result = promtool(['check', 'config', file]);
    expect(result.ok, result.output).toBe(true);
    expect(result.output).toMatch(/2 rule files found/);
  });
});
