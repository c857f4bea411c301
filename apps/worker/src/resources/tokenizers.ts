// The tokenizer of a run's base model and its chat format: a built-in tokenizer (`byte`,
// embedded ids) or a Hugging Face tokenizer.json (`{type: hf}`), loaded once per file; the
// marker format (`toolFormat`) or the model's own chat template (`chatFormat: {type: template}`,
// from its tokenizer_config.json, loaded once per file).
import { dirname, join } from 'node:path';
import {
  type ChatTemplate,
  TokenizerConfigError,
  loadChatTemplate,
  loadHfTokenizer,
  readModelStopIds,
  type Tokenizer,
} from '@anneal/engines';
import {
  type ChatFormat,
  FormatError,
  type SearchToolDescription,
  type ToolCallMarkers,
  createTemplateChatFormat,
  createToolCallFormat,
  searchWebToolSpec,
} from '@anneal/envs';
import type { ChatFormatConfig, HfTokenizerConfig, ToolFormatConfig } from '@anneal/protocol';
import { RunSetupError } from '../errors.ts';

/** What `baseModels.<name>` says about tokenization (absent fields: the built-in defaults). */
export interface TokenizerSource {
  /** The operator-config name, for error messages. */
  baseModel: string;
  hf?: HfTokenizerConfig;
  toolFormat?: ToolFormatConfig;
  chatFormat?: ChatFormatConfig;
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

/**
 * The run's chat format: the marker format (default; markers from `toolFormat`) or, for
 * `chatFormat: {type: template}`, the model's chat template, declaring search_web with the
 * run's limits. Templates are loaded once per tokenizer_config.json path; errors name the
 * operator-config field.
 */
export function chatFormatLoader(): (
  tokenizer: Tokenizer,
  source?: TokenizerSource,
  tool?: SearchToolDescription,
) => ChatFormat {
  const templates = new Map<string, ChatTemplate>();
  return (tokenizer, source, tool) => {
    const config = source?.chatFormat;
    if (config?.type !== 'template') {
      return createToolCallFormat(tokenizer, source && toolMarkersOf(tokenizer, source));
    }
    const field = `baseModels.${source?.baseModel ?? '?'}.chatFormat`;
    const hfPath = source?.hf?.path;
    if (hfPath === undefined) {
      throw new RunSetupError(`${field}: {type: template} needs tokenizer {type: hf, path, …}`);
    }
    const path = config.path ?? join(dirname(hfPath), 'tokenizer_config.json');
    let template = templates.get(path);
    if (template === undefined) {
      try {
        template = loadChatTemplate(path);
      } catch (error) {
        if (!(error instanceof TokenizerConfigError)) throw error;
        throw new RunSetupError(`${field}.path: ${error.message}`, { cause: error });
      }
      templates.set(path, template);
    }
    let stops: number[];
    try {
      // vLLM also stops at the model's generation_config.json eos ids (Qwen3: <|endoftext|>)
      stops = readModelStopIds(dirname(hfPath), tokenizer);
    } catch (error) {
      if (!(error instanceof TokenizerConfigError)) throw error;
      throw new RunSetupError(
        `baseModels.${source?.baseModel ?? '?'}.tokenizer: ${error.message}`,
        {
          cause: error,
        },
      );
    }
    try {
      return createTemplateChatFormat({
        tokenizer,
        template,
        extraStopTokenIds: stops,
        ...(config.turnParser !== undefined && { turnParser: config.turnParser }),
        tools: [searchWebToolSpec(tool)],
        ...(config.systemPrompt !== undefined && { systemPrompt: config.systemPrompt }),
        ...(config.templateArgs !== undefined && { templateArgs: config.templateArgs }),
        ...(config.endOfTurn !== undefined && { endOfTurn: config.endOfTurn }),
      });
    } catch (error) {
      if (!(error instanceof FormatError || error instanceof TokenizerConfigError)) throw error;
      const at = error instanceof FormatError && error.message.startsWith('endOfTurn') ? '.' : ': ';
      throw new RunSetupError(`${field}${at}${error.message}`, { cause: error });
    }
  };
}
