// A Prometheus config for processes on this machine (tests, `anneal up`): the jobs, metric
// paths and rules of prometheus.yml, with static targets instead of Docker DNS discovery.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { PROMETHEUS_DIR, PROMETHEUS_RULES_DIR } from './paths.ts';

export interface LocalTargets {
  /** host:port of each job's targets, by job name of prometheus.yml. */
  'anneal-control-plane': string[];
  'anneal-worker': string[];
  vllm?: string[];
  prometheus?: string[];
}

export interface LocalPrometheusOptions {
  /** Default 1s: short runs in tests need several scrapes. */
  scrapeInterval?: string;
  evaluationInterval?: string;
}

interface ScrapeConfig {
  job_name: string;
  scrape_interval?: string;
  static_configs?: { targets: string[] }[];
  dns_sd_configs?: unknown;
}

export function localPrometheusConfig(
  targets: LocalTargets,
  options: LocalPrometheusOptions = {},
): string {
  const base = parse(readFileSync(path.join(PROMETHEUS_DIR, 'prometheus.yml'), 'utf8')) as {
    global: Record<string, unknown>;
    scrape_configs: ScrapeConfig[];
  };
  const interval = options.scrapeInterval ?? '1s';
  const byJob = targets as unknown as Record<string, string[] | undefined>;
  const scrapeConfigs = base.scrape_configs.flatMap((job) => {
    const jobTargets = byJob[job.job_name];
    if (!jobTargets || jobTargets.length === 0) return [];
    const { dns_sd_configs: _dns, ...rest } = job;
    return [{ ...rest, static_configs: [{ targets: jobTargets }] }];
  });
  return stringify({
    global: {
      ...base.global,
      scrape_interval: interval,
      scrape_timeout: interval,
      evaluation_interval: options.evaluationInterval ?? interval,
      external_labels: { deployment: 'anneal-local' },
    },
    rule_files: [path.join(PROMETHEUS_RULES_DIR, '*.yml')],
    scrape_configs: scrapeConfigs,
  });
}
