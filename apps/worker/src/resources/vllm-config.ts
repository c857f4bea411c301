// Operator-config `inference.<name>` (type vllm) -> the vLLM client's endpoint config.
import { adapterPathResolver, type VllmEndpointConfig } from '@anneal/engines';
import type { InferenceEndpointConfig } from '@anneal/protocol';
import type { WorkerConfig } from '../config.ts';
import { RunSetupError } from '../errors.ts';
import type { ResolvedModel } from '../executors/types.ts';

type VllmEntry = Extract<InferenceEndpointConfig, { type: 'vllm' }>;

export function vllmEndpointConfig(
  name: string,
  entry: VllmEntry,
  model: Pick<ResolvedModel, 'baseModel'>,
  config: Pick<Readonly<WorkerConfig>, 'secrets'>,
): VllmEndpointConfig {
  const where = `inference endpoint '${name}'`;
  let resolveLoraPath;
  try {
    resolveLoraPath = entry.adapters && adapterPathResolver(entry.adapters, where);
  } catch (error) {
    throw new RunSetupError(error instanceof Error ? error.message : String(error));
  }
  return {
    name,
    replicas: entry.replicas,
    // One vLLM deployment serves one base model: its --served-model-name, else the run's id.
    model: entry.servedModel ?? model.baseModel,
    ...(entry.apiKeyEnv && { apiKey: config.secrets[entry.apiKeyEnv] }),
    ...(entry.maxModelLen !== undefined && { maxModelLen: entry.maxModelLen }),
    ...(entry.maxInFlight !== undefined && { maxInFlight: entry.maxInFlight }),
    ...(entry.schedulingPolicy !== undefined && { schedulingPolicy: entry.schedulingPolicy }),
    ...(entry.requestTimeoutSeconds !== undefined && {
      requestTimeoutMs: entry.requestTimeoutSeconds * 1000,
    }),
    ...(entry.retryAttempts !== undefined && { retry: { attempts: entry.retryAttempts } }),
    ...(entry.readerThreads !== undefined && { readerThreads: entry.readerThreads }),
    ...(resolveLoraPath && { resolveLoraPath }),
    ...(entry.maxLoraRank !== undefined && { maxLoraRank: entry.maxLoraRank }),
  };
}
