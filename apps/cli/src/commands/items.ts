// `anneal runs items ID`: an eval run's answers (GET /v1/runs/{id}/items), one block per
// checkpoint × budget × question; `--prompt QUESTION_ID` follows one question through every cell.
import type { Command } from 'commander';
import type { EvalItem, EvalItemPage } from '@anneal/protocol';
import { printJson, withApi } from '../ops/output.ts';
import { clip, num, setSort } from './record-format.ts';
import { terminalSafe, writeOut } from '../ops/terminal-text.ts';

export function itemBlock(x: EvalItem): string {
  const reward = x.reward === undefined ? '' : `  s ${num(x.reward)}`;
  const verdict = x.correct ? '✓ correct' : '✗ wrong';
  return [
    `── step ${x.step} · checkpoint ${x.checkpoint} · b ${x.budget} · ${terminalSafe(x.id)}  ${verdict} (${x.grader})${x.abstained ? ' · abstained' : ''}${reward}`,
    `   ${x.finish} · ${x.toolCalls} tool calls (${x.brokenCalls} broken, ${x.searchCalls} searched) · ${x.promptTokens} prompt / ${x.completionTokens} completion tokens · attempt ${x.attempt}`,
    `   answer: ${x.answer === null ? '(none)' : clip(x.answer)}`,
  ].join('\n');
}

interface ItemFlags {
  step?: string;
  checkpoint?: string;
  budget?: string;
  prompt?: string;
  wrong?: boolean;
  correct?: boolean;
  grep?: string;
  sort?: string;
  limit: string;
  cursor?: string;
  json?: boolean;
}

export function itemQuery(flags: ItemFlags): URLSearchParams {
  const query = new URLSearchParams({ limit: flags.limit });
  for (const name of ['step', 'checkpoint', 'budget', 'prompt', 'grep', 'cursor'] as const) {
    const value = flags[name];
    if (value !== undefined) query.set(name, value);
  }
  if (flags.wrong) query.set('correct', 'false');
  if (flags.correct) query.set('correct', 'true');
  setSort(query, flags.sort);
  return query;
}

export function registerItems(runs: Command): void {
  runs
    .command('items')
    .description("An eval run's answers, one per checkpoint × budget × question")
    .argument('<id>', 'eval run id')
    .option('--step <n>', 'one cell (checkpoint × budget)')
    .option('--checkpoint <i>', 'position in the spec models')
    .option('--budget <b>', 'tool-call budget')
    .option('--prompt <questionId>', 'one question in every cell')
    .option('--wrong', 'only wrong answers')
    .option('--correct', 'only correct answers')
    .option('--grep <text>', 'text in the answer')
    .option('--sort <key>', 'reward | toolCalls | length | promptTokens; -key for descending')
    .option('--limit <k>', 'items per page (1-200)', '50')
    .option('--cursor <cursor>', 'the next page (printed after a full page)')
    .option('--json', 'print the API response as JSON')
    .action(async (id: string, flags: ItemFlags) => {
      await withApi(async (client) => {
        const { body } = await client.request<EvalItemPage>(
          'GET',
          `/v1/runs/${encodeURIComponent(id)}/items?${itemQuery(flags)}`,
        );
        if (flags.json) return printJson(body);
        writeOut(
          body.items.length === 0 ? 'no items\n' : `${body.items.map(itemBlock).join('\n')}\n`,
        );
        if (body.nextCursor) writeOut(`\nmore: --cursor ${body.nextCursor}\n`);
      });
    });
}
