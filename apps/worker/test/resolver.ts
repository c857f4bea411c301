// Test support: a ResourceResolver built the way the worker builds one, from operator-config
// YAML, with the stub embedded engines and the real engine factories for remote endpoints.
import path from 'node:path';
import { parseOperatorConfig } from '@anneal/protocol';
import { createEventBus, noopLogger } from '@anneal/telemetry';
import { defineWorkerConfig } from '../src/config.ts';
import { EngineCache } from '../src/resources/engine-cache.ts';
import { defaultEngineFactories } from '../src/resources/factories.ts';
import { ResourceResolver } from '../src/resources/resolve.ts';
import { STUB_EMBEDDED } from './fixtures/engines.ts';
import type { TestEnv } from './helpers.ts';

export function resolverFromYaml(
  env: TestEnv,
  yaml: string,
  options: { dir: string; secrets?: Record<string, string> },
): ResourceResolver {
  const parsed = parseOperatorConfig(yaml);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return new ResourceResolver({
    store: env.store,
    config: defineWorkerConfig({
      operatorConfig: parsed.value,
      artifactDir: path.join(options.dir, 'worker'),
      secrets: options.secrets ?? {},
    }),
    factories: defaultEngineFactories(STUB_EMBEDDED),
    cache: new EngineCache(),
    telemetry: createEventBus(),
    logger: noopLogger,
  });
}
