// Loads the operator config once at start-up: the YAML file, or local mode (one tenant
// `default`, one operator token from ANNEAL_TOKEN or generated).
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { checkRegisteredDatasets } from '@anneal/envs/datasets';
import {
  type DatasetFacts,
  type OperatorConfig,
  formatIssues,
  localOperatorConfig,
  parseOperatorConfig,
} from '@anneal/protocol';
import { sha256Hex } from './plugins/auth.ts';

export interface LoadedOperatorConfig {
  operator: OperatorConfig;
  /** Registered datasets, all valid: which need an LLM judge (submission checks it). */
  datasetFacts?: DatasetFacts;
  /** Local mode: the operator token (generated when ANNEAL_TOKEN was not set). */
  localToken?: { token: string; generated: boolean };
}

export class OperatorConfigError extends Error {
  constructor(path: string, details: string) {
    super(`invalid operator config ${path}:\n${details}`);
    this.name = 'OperatorConfigError';
  }
}

export async function loadOperatorConfig(options: {
  configPath?: string;
  token?: string;
}): Promise<LoadedOperatorConfig> {
  if (options.configPath !== undefined) {
    let text: string;
    try {
      text = await readFile(options.configPath, 'utf8');
    } catch (error) {
      throw new OperatorConfigError(options.configPath, `cannot read: ${(error as Error).message}`);
    }
    const parsed = parseOperatorConfig(text);
    if (!parsed.ok) throw new OperatorConfigError(options.configPath, formatIssues(parsed.errors));
    // Every dataset file is read and validated now, before any run can name it.
    const { limits } = parsed.value;
    const datasets = await checkRegisteredDatasets(parsed.value.datasets, {
      maxFileBytes: limits.datasetFileBytes,
      maxLineBytes: limits.datasetLineBytes,
    });
    if (datasets.problems.length > 0) {
      throw new OperatorConfigError(options.configPath, datasets.problems.join('\n'));
    }
    return {
      operator: Object.freeze(parsed.value),
      datasetFacts: Object.freeze({ needsJudge: datasets.needsJudge }),
    };
  }
  const token = options.token ?? randomBytes(24).toString('base64url');
  return {
    operator: Object.freeze(localOperatorConfig(sha256Hex(token))),
    localToken: { token, generated: options.token === undefined },
  };
}
