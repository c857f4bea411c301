// `anneal runs rollouts ID [ROLLOUT_ID]`: a GRPO run's rollout ledger (GET /v1/runs/{id}/rollouts,
// one rollout with GET …/rollouts/{rolloutId}); `--vs RUN` puts the same prompts of another run
// beside them.
import type { Command } from 'commander';
import type { ListedRollout, RolloutPage, RolloutRecord } from '@anneal/protocol';
import type { ApiClient } from '../api/client.ts';
import { printJson, withApi } from '../ops/output.ts';
import { setSort } from './record-format.ts';
import { rolloutBlock, versusBlock } from './rollouts-format.ts';
import { writeOut } from '../ops/terminal-text.ts';

interface RolloutFlags {
  step?: string;
  sort?: string;
  limit: string;
  grep?: string;
  prompt?: string;
  role?: string;
  finish?: string;
  toolErrors?: boolean;
  cursor?: string;
  vs?: string;
  json?: boolean;
}

function rolloutQuery(flags: RolloutFlags): URLSearchParams {
  const query = new URLSearchParams({ limit: flags.limit });
  if (flags.step !== undefined) query.set('step', flags.step);
  setSort(query, flags.sort);
  if (flags.grep !== undefined) query.set('grep', flags.grep);
  if (flags.prompt !== undefined) query.set('prompt', flags.prompt);
  if (flags.role !== undefined) query.set('role', flags.role);
  if (flags.finish !== undefined) query.set('finish', flags.finish);
  if (flags.toolErrors) query.set('hasToolErrors', 'true');
  if (flags.cursor !== undefined) query.set('cursor', flags.cursor);
  return query;
}

const rolloutsPath = (run: string) => `/v1/runs/${encodeURIComponent(run)}/rollouts`;

/** The other run's policy rollouts of each prompt on the page (at the same step with --step). */
async function versus(
  client: ApiClient,
  page: RolloutPage,
  other: string,
  flags: RolloutFlags,
): Promise<string> {
  const prompts = new Map<string, ListedRollout[]>();
  for (const r of page.rollouts) prompts.set(r.promptId, [...(prompts.get(r.promptId) ?? []), r]);
  const blocks: string[] = [];
  for (const [promptId, mine] of prompts) {
    const query = new URLSearchParams({ prompt: promptId, role: 'policy', limit: flags.limit });
    if (flags.step !== undefined) query.set('step', flags.step);
    const { body } = await client.request<RolloutPage>('GET', `${rolloutsPath(other)}?${query}`);
    blocks.push(
      versusBlock(
        promptId,
        mine[0]?.prompt.text ?? '',
        { run: page.runId, rollouts: mine },
        { run: other, rollouts: body.rollouts },
      ),
    );
  }
  return blocks.join('\n\n');
}

export function registerRollouts(runs: Command): void {
  runs
    .command('rollouts')
    .description(
      "A GRPO run's rollouts: turns, tool calls, reward breakdown, advantage, IS ratios (one in full with ROLLOUT_ID)",
    )
    .argument('<id>', 'run id')
    .argument('[rolloutId]', 'one rollout, e.g. 12-3-0 (a reference: 12-3-r0)')
    .option('--step <n>', 'only this step')
    .option('--sort <key>', 'reward | advantage | ratio | length | toolCalls; -key for descending')
    .option('--limit <k>', 'rollouts per page (1-200)', '20')
    .option('--grep <text>', 'text in the prompt, turns, tool calls or answer')
    .option('--prompt <promptId>', 'one prompt across steps')
    .option('--role <role>', 'policy | reference')
    .option('--finish <reason>', 'answer | no_answer | length | context_overflow')
    .option('--tool-errors', 'only rollouts with a failed tool call')
    .option('--cursor <cursor>', 'the next page (printed after a full page)')
    .option('--vs <run>', 'the same prompts in another run, side by side (its policy rollouts)')
    .option('--json', 'print the API response as JSON')
    .action(async (id: string, rolloutId: string | undefined, flags: RolloutFlags) => {
      await withApi(async (client) => {
        if (rolloutId !== undefined) {
          const { body } = await client.request<RolloutRecord>(
            'GET',
            `${rolloutsPath(id)}/${encodeURIComponent(rolloutId)}`,
          );
          if (flags.json) return printJson(body);
          writeOut(`${rolloutBlock(body)}\n`);
          return;
        }
        const { body: page } = await client.request<RolloutPage>(
          'GET',
          `${rolloutsPath(id)}?${rolloutQuery(flags)}`,
        );
        if (flags.json) return printJson(page);
        const text = flags.vs
          ? await versus(client, page, flags.vs, flags)
          : page.rollouts.map(rolloutBlock).join('\n\n');
        writeOut(page.rollouts.length === 0 ? 'no rollouts\n' : `${text}\n`);
        if (page.nextCursor) writeOut(`\nmore: --cursor ${page.nextCursor}\n`);
      });
    });
}
