// The operator's registered JSONL datasets a run names (`data.mix` sources, eval `datasets`),
// read and validated once per worker (packages/envs) and added to the built-in catalogue. A bad
// or unreadable file fails the run at set-up (RunSetupError, no retries), naming the line.
import type { Tokenizer } from '@anneal/engines';
import {
  type ChatFormat,
  type RegisteredDataset,
  type ToolCallMarkers,
  RegisteredDatasetError,
  loadRegisteredDataset,
} from '@anneal/envs';
import { type OperatorConfig, type RunSpec, specDatasets } from '@anneal/protocol';
import { RunSetupError } from '../errors.ts';
import { defaultDataCatalog } from './data/builtin-catalog.ts';
import type { DataCatalog } from './data/catalog.ts';
import { withRegisteredDatasets } from './data/registered-catalog.ts';

export class RegisteredDatasets {
  /** Loaded datasets by `name\0path` (a changed path in a new config reloads). */
  private readonly loaded = new Map<string, Promise<RegisteredDataset>>();

  constructor(private readonly config: OperatorConfig) {}

  private load(name: string): Promise<RegisteredDataset> | undefined {
    const entry = this.config.datasets[name];
    if (entry === undefined) return undefined;
    const key = `${name}\0${entry.path}`;
    let dataset = this.loaded.get(key);
    if (dataset === undefined) {
      const { limits } = this.config;
      dataset = loadRegisteredDataset(name, entry, {
        maxFileBytes: limits.datasetFileBytes,
        maxLineBytes: limits.datasetLineBytes,
      });
      // A failed load is retried by the next run that names it (the file may be fixed by then).
      dataset.catch(() => this.loaded.delete(key));
      this.loaded.set(key, dataset);
    }
    return dataset;
  }

  /** The run's data catalogue: undefined (the built-in default) unless it names registered data. */
  async catalogFor(
    spec: RunSpec,
    tokenizer: Tokenizer,
    markers?: ToolCallMarkers,
    format?: ChatFormat,
  ): Promise<DataCatalog | undefined> {
    const names = [...new Set(specDatasets(spec).map((d) => d.name))];
    const pending = names.flatMap((name) => this.load(name) ?? []);
    if (pending.length === 0) return undefined;
    let datasets: RegisteredDataset[];
    try {
      datasets = await Promise.all(pending);
    } catch (error) {
      if (error instanceof RegisteredDatasetError) throw new RunSetupError(error.message);
      throw error;
    }
    return withRegisteredDatasets(defaultDataCatalog(), datasets, tokenizer, markers, format);
  }
}
