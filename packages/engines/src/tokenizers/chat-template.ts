// A model's own chat template (the Jinja `chat_template` of its tokenizer_config.json), rendered
// with @huggingface/jinja — the reference JS implementation of HF chat templates — the way
// transformers' `apply_chat_template` renders it: `messages`, `tools`, `add_generation_prompt`,
// the config's `bos_token`/`eos_token`, plus template arguments (Qwen3's `enable_thinking`).
// Rendering gives text only; encoding it is the tokenizer's job (without post_processor
// specials, as `apply_chat_template` does: templates write their own BOS).
import { readFileSync } from 'node:fs';
import { Template } from '@huggingface/jinja';
import { TokenizerConfigError } from './hf-config.ts';

/** One message as chat templates read it (OpenAI/HF shape). */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** Assistant tool calls, HF shape: `{type: 'function', function: {name, arguments}}`. */
  tool_calls?: ChatToolCall[];
  /** Tool messages: the tool's name (some templates print it). */
  name?: string;
}

export interface ChatToolCall {
  type: 'function';
  function: { name: string; arguments: Record<string, unknown> };
}

/** A tool declared to the template (HF/OpenAI JSON-schema function tool). */
export interface ChatToolSpec {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** Values a template may read besides messages/tools (e.g. `{enable_thinking: false}`). */
export type TemplateArgs = Readonly<Record<string, string | number | boolean>>;

export interface RenderOptions {
  tools?: readonly ChatToolSpec[];
  addGenerationPrompt: boolean;
  args?: TemplateArgs;
}

export class ChatTemplate {
  private readonly template: Template;

  constructor(
    readonly source: string,
    /** Special-token texts the template may print (`bos_token`, `eos_token`, …). */
    private readonly specialTokens: Readonly<Record<string, string>> = {},
    /** Where the template came from, for error messages. */
    readonly origin = 'chat_template',
  ) {
    try {
      this.template = new Template(source);
    } catch (error) {
      throw new TokenizerConfigError(`${origin}: not a valid Jinja template: ${String(error)}`);
    }
  }

  render(messages: readonly ChatMessage[], options: RenderOptions): string {
    const context: Record<string, unknown> = {
      ...options.args,
      ...this.specialTokens,
      messages,
      add_generation_prompt: options.addGenerationPrompt,
    };
    if (options.tools !== undefined && options.tools.length > 0) context['tools'] = options.tools;
    try {
      return this.template.render(context);
    } catch (error) {
      // Templates raise on conversations they do not accept (raise_exception).
      throw new TokenizerConfigError(`${this.origin}: rendering failed: ${String(error)}`);
    }
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A special-token entry of tokenizer_config.json: a string or an AddedToken `{content}`. */
function tokenText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (isObject(value) && typeof value['content'] === 'string') return value['content'];
  return undefined;
}

/**
 * The chat template of a parsed tokenizer_config.json. `chat_template` is a string, or a list
 * of `{name, template}` (then `tool_use`, else `default`, is the one for tool calling).
 */
export function chatTemplateFromConfig(config: unknown, origin: string): ChatTemplate {
  if (!isObject(config)) {
    throw new TokenizerConfigError(`${origin}: tokenizer_config.json must be a JSON object`);
  }
  const raw = config['chat_template'];
  let source: unknown = raw;
  if (Array.isArray(raw)) {
    const named = (name: string): unknown =>
      raw.find((entry: unknown) => isObject(entry) && entry['name'] === name);
    const entry = named('tool_use') ?? named('default');
    source = isObject(entry) ? entry['template'] : undefined;
  }
  if (typeof source !== 'string' || source.length === 0) {
    throw new TokenizerConfigError(
      `${origin}: chat_template: missing (expected the model's Jinja chat template, a string ` +
        "or a list with a 'tool_use' or 'default' entry)",
    );
  }
  const specialTokens: Record<string, string> = {};
  for (const key of ['bos_token', 'eos_token', 'pad_token', 'unk_token']) {
    const text = tokenText(config[key]);
    if (text !== undefined) specialTokens[key] = text;
  }
  return new ChatTemplate(source, specialTokens, `${origin}: chat_template`);
}

/** Load the chat template of a tokenizer_config.json on disk. */
export function loadChatTemplate(path: string): ChatTemplate {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new TokenizerConfigError(`cannot read tokenizer config ${path}: ${String(error)}`);
  }
  return chatTemplateFromConfig(json, path);
}
