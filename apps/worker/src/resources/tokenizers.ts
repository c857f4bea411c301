// The tokenizer of a run's base model and the tool-call markers it uses: a built-in tokenizer
// (`byte`, embedded ids) or a Hugging Face tokenizer.json (`{type: hf}`), loaded once per file.
import { TokenizerConfigError, loadHfTokenizer, type Tokenizer } from '@anneal/engines';
import type { ToolCallMarkers } from '@anneal/envs';
import type { HfTokenizerConfig, ToolFormatConfig } from '@anneal/protocol';
import { RunSetupError } from '../errors.ts';

/** What `baseModels.<name>` says about tokenization (absent fields: the built-in defaults). */
export interface TokenizerSource {
  /** The operator-config name, for error messages. */
  baseModel: string;
  hf?: HfTokenizerConfig;
  toolFormat?: ToolFormatConfig;
}

/** Loads `{type: hf}` tokenizers, one per (path, eosToken), and keeps them for later runs. */
export function hfTokenizerCache(): (
  source: TokenizerSource & { hf: HfTokenizerConfig },
) => Tokenizer {
  const loaded = new Map<string, Tokenizer>();
  return ({ baseModel, hf }) => {
    const key = JSON.stringify([hf.path, hf.eosToken]);
    let tokenizer = loaded.get(key);
    if (tokenizer === undefined) {
      try {
        tokenizer = loadHfTokenizer(hf.path, { eosToken: hf.eosToken });
      } catch (error) {
        if (!(error instanceof TokenizerConfigError)) throw error;
        throw new RunSetupError(`baseModels.${baseModel}.tokenizer: ${error.message}`);
      }
      loaded.set(key, tokenizer);
    }
    return tokenizer;
  };
}

/**
 * The run's tool-call markers: `toolFormat` plus the tokenizer's eos text, each checked to be a
 * single added token of the tokenizer; undefined without a `toolFormat` (the format's defaults).
 */
export function toolMarkersOf(
  tokenizer: Tokenizer,
  source: TokenizerSource,
): ToolCallMarkers | undefined {
  const format = source.toolFormat;
  if (format === undefined) return undefined;
  const eos = tokenizer.decode([tokenizer.eosTokenId]);
  const seen = new Map<string, string>([[eos, 'the eos token']]);
  for (const [key, marker] of Object.entries(format)) {
    const clash = seen.get(marker);
    if (clash !== undefined) {
      throw new RunSetupError(
        `baseModels.${source.baseModel}.toolFormat.${key}: '${marker}' is already ${clash}; ` +
          'markers must be distinct tokens',
      );
    }
    seen.set(marker, `toolFormat.${key}`);
    const id = tokenizer.specialTokenId(marker);
    const ids = tokenizer.encode(marker);
    if (id === undefined || ids.length !== 1 || ids[0] !== id) {
      throw new RunSetupError(
        `baseModels.${source.baseModel}.toolFormat.${key}: '${marker}' is not a single added ` +
          `token of the tokenizer (encodes to ${ids.length} tokens)`,
      );
    }
  }
  return { ...format, eos };
}
