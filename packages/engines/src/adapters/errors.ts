// Why sampler weights on disk cannot be served: an unsafe or oversized archive, or content that
// is not a LoRA adapter. Thrown before any replica is asked to load anything, so a bad checkpoint
// fails the weight sync with the file and the reason instead of an opaque vLLM 4xx/5xx.

export type AdapterErrorReason =
  /** An entry that would land outside the destination (absolute, `..`, link escape). */
  | 'unsafe-entry'
  /** A device, FIFO or other entry type an adapter never contains. */
  | 'unsupported-entry'
  /** Over the per-entry, total-size or entry-count cap. */
  | 'too-large'
  /** Not a readable tar / tar.gz. */
  | 'corrupt'
  /** A full model (config.json, no adapter_config.json): cannot load as a LoRA adapter. */
  | 'full-weights'
  /** SkyRL's `persist=False` marker: the weights live in the trainer's GPUs, not on disk. */
  | 'marker-only'
  /** adapter_config.json unreadable or without a usable rank `r`. */
  | 'bad-config'
  /** Tensors adapting a module the base model has no LoRA for (an unconverted export). */
  | 'unservable-modules'
  /** A hosted Tinker archive without its `checkpoint_complete` marker. */
  | 'incomplete';

export class AdapterError extends Error {
  readonly reason: AdapterErrorReason;
  /** The archive or directory at fault. */
  readonly path: string;

  constructor(reason: AdapterErrorReason, path: string, detail: string, cause?: unknown) {
    super(`sampler weights ${path}: ${detail}`, { cause });
    this.name = 'AdapterError';
    this.reason = reason;
    this.path = path;
  }
}
