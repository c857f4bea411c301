// `tinker://` paths of the embedded trainer server ↔ directories under its artifact root:
//   tinker://<model_id>/weights/<name>  ↔  <root>/<model_id>/weights/<name>          (save_weights)
//   tinker://<model_id>/<name>          ↔  <root>/<model_id>/sampler_weights/<name>  (for sampler)
import path from 'node:path';

const NAME = /^[a-zA-Z0-9_-]+$/;
const PREFIX = 'tinker://';

export const tinkerWeightsUri = (modelId: string, name: string) =>
  `${PREFIX}${modelId}/weights/${name}`;
export const tinkerSamplerUri = (modelId: string, name: string) => `${PREFIX}${modelId}/${name}`;

/** The local directory of a tinker:// path; throws on anything else (no path traversal). */
export function resolveTinkerPath(root: string, uri: string): string {
  const parts = uri.startsWith(PREFIX) ? uri.slice(PREFIX.length).split('/') : [];
  const valid = parts.every((p) => NAME.test(p));
  if (valid && parts.length === 3 && parts[1] === 'weights') {
    return path.join(root, parts[0]!, 'weights', parts[2]!);
  }
  if (valid && parts.length === 2) return path.join(root, parts[0]!, 'sampler_weights', parts[1]!);
  throw new RangeError(
    `'${uri}' is not a tinker://<model_id>/weights/<name> or tinker://<model_id>/<name> path`,
  );
}

/** For EmbeddedInferenceEngine's `resolvePath`: tinker:// paths map under root, others pass. */
export function tinkerPathResolver(root: string): (weightsPath: string) => string {
  return (p) => (p.startsWith(PREFIX) ? resolveTinkerPath(root, p) : p);
}
