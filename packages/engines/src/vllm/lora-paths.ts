// Sampler weights (`tinker://…`) -> the adapter directory the vLLM replicas read
// (docs/engines.md "Weight sync to the sampler"): the trainer writes adapters under its
// checkpoint base, which the operator mounts on every replica at `root`.
import type { SamplerWeights } from '../types.ts';

/** SkyRL / embedded-trainer layout under the checkpoint base. */
export const DEFAULT_ADAPTER_LAYOUT = '{model_id}/sampler_weights/{name}';

const PREFIX = 'tinker://';
const SEGMENT = /^(?!\.{1,2}$)[A-Za-z0-9_.:-]+$/;
const LAYOUT = /^(?:[A-Za-z0-9_.-]|\/|\{name\}|\{model_id\})+$/;

export interface AdapterStorage {
  /** Absolute path of the trainer's checkpoint base on the replicas. */
  root: string;
  /** Relative path of one adapter under `root` (default DEFAULT_ADAPTER_LAYOUT). */
  layout?: string;
}

/** `tinker://<model_id>/<name>` (SkyRL, embedded) or `tinker://<model_id>/sampler_weights/<name>`
 * (hosted Tinker) -> its parts; undefined for any other shape. */
export function parseSamplerUri(uri: string): { modelId: string; name: string } | undefined {
  if (!uri.startsWith(PREFIX)) return undefined;
  const parts = uri.slice(PREFIX.length).split('/');
  if (!parts.every((p) => SEGMENT.test(p))) return undefined;
  if (parts.length === 2) return { modelId: parts[0]!, name: parts[1]! };
  if (parts.length === 3 && parts[1] === 'sampler_weights') {
    return { modelId: parts[0]!, name: parts[2]! };
  }
  return undefined;
}

/** A `resolveLoraPath` for VllmEndpointConfig: maps sampler URIs under `storage.root`; other
 * (already shared-storage) paths pass unchanged. Throws at construction on a bad storage. */
export function adapterPathResolver(
  storage: AdapterStorage,
  where = 'vLLM endpoint',
): (weights: SamplerWeights) => string {
  const root = storage.root.replace(/\/+$/, '');
  const layout = storage.layout ?? DEFAULT_ADAPTER_LAYOUT;
  if (!storage.root.startsWith('/')) {
    throw new TypeError(`${where}: adapters.root must be an absolute path, got '${storage.root}'`);
  }
  if (
    !LAYOUT.test(layout) ||
    layout.startsWith('/') ||
    layout.includes('..') ||
    !layout.includes('{name}')
  ) {
    throw new TypeError(
      `${where}: adapters.layout '${layout}' must be a relative path containing {name} ` +
        '(placeholders: {name}, {model_id}; no ..)',
    );
  }
  return (weights) => {
    if (!weights.path.startsWith(PREFIX)) return weights.path;
    const parsed = parseSamplerUri(weights.path);
    if (parsed === undefined) {
      throw new TypeError(
        `${where}: '${weights.path}' is not a sampler-weights path ` +
          '(tinker://<model_id>/<name> or tinker://<model_id>/sampler_weights/<name>)',
      );
    }
    const relative = layout
      .replaceAll('{model_id}', parsed.modelId)
      .replaceAll('{name}', parsed.name);
    return `${root}/${relative}`;
  };
}
