// GRPO, eval and SFT runs on a base model registered with its own chat template (Qwen3's real
// tokenizer.json + tokenizer_config.json), resolved from the operator config exactly as the
// worker does: a vLLM endpoint (the fake vLLM server) and a Tinker trainer endpoint (the fake
// Tinker server, which takes any vocabulary — the embedded trainer's byte model cannot take
// Qwen3 ids). The first sampled turns are scripted in Qwen3 ids: one valid Hermes
// <tool_call>, one call of an unknown tool; the rest of the run samples the fake's ids.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadChatTemplate, loadHfTokenizer, type ChatMessage } from '@anneal/engines';
import {
  FakeTinkerServer,
  FakeVllmServer,
  QWEN3_TOKENIZER_CONFIG,
  QWEN3_TOKENIZER_JSON,
  completionResponse,
  qwen3Reference,
} from '@anneal/engines/testing';
import { searchWebToolSpec } from '@anneal/envs';
import { parseRunSpec, type RunSpec } from '@anneal/protocol';
import { type TestEnv, testEnv } from '../../test/helpers.ts';
import { resolverFromYaml } from '../../test/resolver.ts';
import { RunSetupError } from '../errors.ts';
import { EMBEDDED_CONTEXT_TOKENS, defaultDataCatalog } from './data/builtin-catalog.ts';
import { maxContextTokens } from './data/resolve.ts';
import { budgetStatement } from '../executors/eval/index.ts';
import { EXECUTORS } from '../executors/index.ts';
import { METRIC } from '../executors/metrics.ts';
import { memoryContext, specOfKind } from '../../test/executors/fakes.ts';
import type { ResourceResolver } from './resolve.ts';

const EOS = '<|endoftext|>';
const tokenizer = loadHfTokenizer(QWEN3_TOKENIZER_JSON, { eosToken: EOS });
const template = loadChatTemplate(QWEN3_TOKENIZER_CONFIG);
const reference = qwen3Reference();
const IM_END = tokenizer.specialTokenId('<|im_end|>') as number;
const decode = (ids: readonly number[]) => tokenizer.decode([...ids]);

const VALID =
  '<think>\nLook it up.\n</think>\n\n' +
  '<tool_call>\n{"name": "search_web", "arguments": {"query": "Vek"}}\n</tool_call>';
const MALFORMED = '<tool_call>\n{"name": "python", "arguments": {"code": "1+1"}}\n</tool_call>';
const RESPONSE_HEAD = '\n<|im_start|>user\n<tool_response>\n';
const RESPONSE_TAIL = '\n</tool_response><|im_end|>\n<|im_start|>assistant\n';

let env: TestEnv;
let dir: string;
let vllm: FakeVllmServer;
let tinker: FakeTinkerServer;

beforeEach(async () => {
  env = await testEnv();
  dir = await mkdtemp(path.join(tmpdir(), 'anneal-chat-template-'));
  // Fake Tinker writes no adapter files: the fake vLLM must not read them.
  vllm = await FakeVllmServer.start({ servedModel: 'qwen3-base', checkAdapterFiles: false });
  tinker = await FakeTinkerServer.start({});
});
afterEach(async () => {
  await Promise.all([vllm.close(), tinker.close(), env.cleanup()]);
  await rm(dir, { recursive: true, force: true });
});

function resolver(datasets = ''): ResourceResolver {
  return resolverFromYaml(
    env,
    `${datasets}
pools: { default: {} }
inference:
  vllm:
    type: vllm
    replicas: ["${vllm.url}"]
    servedModel: qwen3-base
    adapters: { root: ${JSON.stringify(path.join(dir, 'adapters'))} }
trainers:
  tinker:
    type: tinker
    url: ${tinker.url}
    capabilities: { kinds: [grpo, sft, eval], losses: [importance_sampling, cross_entropy] }
baseModels:
  qwen3:
    model: qwen3-base
    tokenizer: { type: hf, path: ${JSON.stringify(QWEN3_TOKENIZER_JSON)}, eosToken: "${EOS}" }
    chatFormat: { type: template, path: ${JSON.stringify(QWEN3_TOKENIZER_CONFIG)} }
defaults: { pool: default, inference: vllm, trainer: tinker, baseModel: qwen3 }
tenants: { default: {} }
tokens: [{ name: t, sha256: "${'c'.repeat(64)}", role: operator, tenant: default }]
`,
    { dir },
  );
}

function spec(text: string): RunSpec {
  const parsed = parseRunSpec(text);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

/** A vLLM reply whose two choices are these assistant turns, each ended by <|im_end|>; it names
 * the adapter the request named, as vLLM's reply does (engines vllm/reply-model.ts). */
function scriptedTurns(...turns: string[]) {
  const choices = turns.map((text) => {
    const tokens = [...reference.encode(text), IM_END];
    return {
      tokens,
      logprobs: tokens.map(() => -0.5),
      finishReason: 'stop' as const,
      stopReason: IM_END,
    };
  });
  return {
    kind: 'reply' as const,
    status: 200,
    body: (request: { model: string }) => completionResponse('new', request.model, [], choices),
  };
}

interface CompletionBody {
  prompt: number[];
  n: number;
  stop_token_ids?: number[];
  logprobs?: number;
}

describe('GRPO on a chat-template base model (Qwen3)', () => {
  it('renders prompts and tool results with the template, stops on <|im_end|>, counts malformed calls', async () => {
    const r = resolver();
    const grpo = spec(`
kind: grpo
steps: 2
checkpointInterval: 2
lora: { rank: 8 }
rollout: { groupSize: 2, promptsPerStep: 1, maxTokens: 96 }
tools: { resultsPerCall: 3, maxQueryLength: 120 }
data: { mix: [{ source: search-qa, weight: 1 }] }
`);
    const runId = 'run_qwen3';
    const resources = await r.resolve({ id: runId, tenant: 'default', spec: grpo });
    // The built-in catalogue's window is the embedded byte model's, not Qwen3's.
    expect(maxContextTokens(resources)).toBeGreaterThan(EMBEDDED_CONTEXT_TOKENS);
    // Step 1's first requests — policy and reference, n = 2 each — get the scripted turns.
    vllm.enqueue(
      '/v1/completions',
      scriptedTurns(VALID, MALFORMED),
      scriptedTurns(VALID, MALFORMED),
    );
    const ctx = memoryContext(specOfKind('grpo', grpo), resources, { runId });
    const result = await EXECUTORS.grpo(ctx);
    expect(result.stopped).toBe(false);
    expect(ctx.commitOrder).toEqual([1, 2]);

    const requests = vllm.requestsTo('/v1/completions').map((q) => q.body as CompletionBody);
    for (const request of requests)
      expect(request.stop_token_ids).toEqual([IM_END, tokenizer.eosTokenId]);
    // Each step's first turns (n = the group size, 2): the policy group's asks for the sampling
    // logprobs, the reference group's does not (never trained on).
    const firstTurns = requests.filter((q) => q.n === 2);
    expect(firstTurns.filter((q) => q.logprobs === 0)).toHaveLength(2);
    expect(firstTurns.filter((q) => q.logprobs === undefined)).toHaveLength(2);
    expect(decode([IM_END, tokenizer.eosTokenId])).toBe(`<|im_end|>${EOS}`);

    // The prompt is the template's rendering: system tools block with the run's limits (the
    // built-in corpus caps results at 1 per call), the user turn, the generation prompt.
    const [first] = requests;
    const promptText = decode(first!.prompt);
    const question = /<\|im_start\|>user\n([^]*)<\|im_end\|>\n<\|im_start\|>assistant\n$/u.exec(
      promptText,
    )?.[1];
    expect(question).toBeDefined();
    const tools = [searchWebToolSpec({ resultsPerCall: 1, maxQueryLength: 120 })];
    const user: ChatMessage = { role: 'user', content: question! };
    const rendered = template.render([user], { tools, addGenerationPrompt: true });
    expect(promptText).toBe(rendered);
    expect(first!.prompt).toEqual(reference.encode(rendered));
    expect(promptText).toMatch(/^<\|im_start\|>system\n# Tools\n[^]*<tools>\n/u);
    expect(promptText).toContain('"description": "The search query, at most 120 characters."');

    // The next segment of each scripted rollout: the prompt, the turn as sampled, then the
    // tool result exactly as the template renders a `tool` message after that turn.
    const prompt = first!.prompt;
    const after = (turn: string) => {
      const head = [...prompt, ...reference.encode(turn), IM_END];
      return requests
        .filter((q) => q.n === 1 && head.every((id, i) => q.prompt[i] === id))
        .map((q) => decode(q.prompt.slice(head.length)));
    };
    const answered = after(VALID);
    expect(answered).toHaveLength(2); // the policy's and the reference's
    for (const delta of answered) {
      expect(delta.startsWith(RESPONSE_HEAD) && delta.endsWith(RESPONSE_TAIL)).toBe(true);
      const output = delta.slice(RESPONSE_HEAD.length, -RESPONSE_TAIL.length);
      expect(output.length).toBeGreaterThan(0);
      const conversation: ChatMessage[] = [
        user,
        { role: 'assistant', content: VALID },
        { role: 'tool', content: output },
      ];
      expect(decode([...prompt, ...reference.encode(VALID), IM_END]) + delta).toBe(
        template.render(conversation, { tools, addGenerationPrompt: true }),
      );
    }
    const refused = after(MALFORMED);
    expect(refused).toHaveLength(2);
    for (const delta of refused) {
      expect(delta).toBe(
        `${RESPONSE_HEAD}error: malformed call: unknown tool "python" (available: search_web)${RESPONSE_TAIL}`,
      );
    }

    // Step 1: each policy rollout made one call; the unknown tool is one failed call.
    const step1 = ctx.steps.get(1)!;
    expect(step1[METRIC.toolCallsPerRollout]).toBe(1);
    expect(step1[METRIC.toolErrorsPerRollout]).toBe(0.5);
    await r.close();
  });

  it('eval: reads the answer after the reasoning block of a template turn', async () => {
    const r = resolver();
    const evalSpec = spec(`
kind: eval
endpoints: { trainer: tinker }
datasets: [search-qa]
examples: 1
budgets: { toolCallBudgets: [1], maxOutputTokens: 64, resultsPerCall: 2, maxQueryLength: 80 }
`);
    const resources = await r.resolve({ id: 'run_eval', tenant: 'default', spec: evalSpec });
    const [example] = defaultDataCatalog().evalSet('search-qa');
    const turn = `<think>\nI know this one.\n</think>\n\n${example!.key.answer}`;
    vllm.enqueue('/v1/completions', scriptedTurns(turn));
    const ctx = memoryContext(specOfKind('eval', evalSpec), resources, { runId: 'run_eval' });
    await EXECUTORS.eval(ctx);
    const [request] = vllm.requestsTo('/v1/completions').map((q) => q.body as CompletionBody);
    const tools = [searchWebToolSpec({ resultsPerCall: 1, maxQueryLength: 80 })];
    // The budget-forced protocol (docs/recipe.md §8.2): the cap b is the template's system
    // message, the question the user turn, search_web declared in the tools block.
    const messages: ChatMessage[] = [
      { role: 'system', content: budgetStatement(1) },
      { role: 'user', content: example!.question },
    ];
    expect(request!.prompt).toEqual(
      reference.encode(template.render(messages, { tools, addGenerationPrompt: true })),
    );
    expect(decode(request!.prompt)).toMatch(
      /^<\|im_start\|>system\nTool budget: at most 1 search_web call\.\n\n# Tools/,
    );
    expect(request!.stop_token_ids).toEqual([IM_END, tokenizer.eosTokenId]);
    const metrics = ctx.steps.get(1)!;
    expect(metrics[METRIC.accuracy]).toBe(1);
    expect(metrics[METRIC.answeredFraction]).toBe(1);
    expect(metrics[METRIC.toolCallsPerRollout]).toBe(0);
    expect(metrics[METRIC.responseTokens]).toBe(reference.encode(turn).length + 1);
    await r.close();
  });

  it('sft: a registered turns dataset trains in the template, assistant turns only', async () => {
    const file = path.join(dir, 'sft.jsonl');
    const row = {
      prompt: 'Where does Vek live?',
      turns: [{ call: 'Vek' }, { result: '1. Vek lives in Oru.' }, { answer: 'Oru' }],
    };
    await writeFile(file, `${JSON.stringify(row)}\n`);
    const r = resolver(`datasets: { qwen-sft: { kind: sft, path: ${JSON.stringify(file)} } }`);
    const sft = spec(
      'kind: sft\nsteps: 1\nbatchSize: 1\ndata: { mix: [{ source: qwen-sft, weight: 1 }] }',
    );
    const resources = await r.resolve({ id: 'run_sft', tenant: 'default', spec: sft });
    await EXECUTORS.sft(memoryContext(specOfKind('sft', sft), resources, { runId: 'run_sft' }));

    const tools = [searchWebToolSpec()];
    const messages: ChatMessage[] = [
      { role: 'user', content: row.prompt },
      {
        role: 'assistant',
        content: '<tool_call>\n{"name": "search_web", "arguments": {"query": "Vek"}}\n</tool_call>',
      },
      { role: 'tool', content: '1. Vek lives in Oru.' },
    ];
    const prompt = reference.encode(
      template.render(messages.slice(0, 1), { tools, addGenerationPrompt: true }),
    );
    const beforeAnswer = reference.encode(
      template.render(messages, { tools, addGenerationPrompt: true }),
    );
    const callTurn = [...reference.encode(messages[1]!.content as string), IM_END];
    const expected = [...beforeAnswer, ...reference.encode('Oru'), IM_END];
    const trained = new Set([
      ...callTurn.map((_, k) => prompt.length + k),
      ...expected.map((_, t) => t).filter((t) => t >= beforeAnswer.length),
    ]);

    interface WireDatum {
      model_input: { chunks: { tokens: number[] }[] };
      loss_fn_inputs: Record<string, { data: number[] }>;
    }
    const [call] = tinker.requests.filter((q) => q.route === 'forward_backward');
    const body = call!.body as { forward_backward_input: { data: WireDatum[]; loss_fn: string } };
    expect(body.forward_backward_input.loss_fn).toBe('cross_entropy');
    const [datum] = body.forward_backward_input.data;
    const input = datum!.model_input.chunks.flatMap((c) => c.tokens);
    const targets = datum!.loss_fn_inputs['target_tokens']!.data;
    expect([...input, targets.at(-1)]).toEqual(expected);
    // weights[t - 1] belongs to token t: > 0 exactly on the assistant turns' tokens
    const weighted = datum!.loss_fn_inputs['weights']!.data.flatMap((w, i) =>
      w > 0 ? [i + 1] : [],
    );
    expect(weighted).toEqual([...trained].sort((a, b) => a - b));
    await r.close();
  });

  it('refuses rm runs, built-in sft data and completion rows on the template base model at set-up', async () => {
    const file = path.join(dir, 'completion.jsonl');
    await writeFile(file, `${JSON.stringify({ prompt: 'q', completion: 'a' })}\n`);
    const r = resolver(`datasets: { marker-sft: { kind: sft, path: ${JSON.stringify(file)} } }`);
    const resolve = (text: string) =>
      r.resolve({ id: 'run_x', tenant: 'default', spec: spec(text) });
    await expect(resolve('kind: sft')).rejects.toThrow(RunSetupError);
    await expect(resolve('kind: sft')).rejects.toThrow(
      /^\/data\/mix\/0\/source: base model 'qwen3' has chatFormat \{type: template\}; 'style-preferences' is not a registered sft dataset/,
    );
    await expect(
      resolve('kind: sft\ndata: { mix: [{ source: marker-sft, weight: 1 }] }'),
    ).rejects.toThrow(
      "dataset 'marker-sft' row 1: completion: marker-format text cannot be rendered in a chat template; write the row as turns",
    );
    await expect(resolve('kind: rm')).rejects.toThrow(
      /^\/model: base model 'qwen3' has chatFormat \{type: template\}; rm runs train on preference pairs/,
    );
    await r.close();
  });
});
