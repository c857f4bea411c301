// The body of `anneal reward score`: read JSONL groups, score each valid one with @anneal/rl
// (docs/recipe.md §4 penalties and gated reward, §2 advantages) and write one JSON line per valid group,
// in input order. Bad lines are reported and skipped; the rest are still scored.
// Randomness: each group's b_g comes from createRng(deriveSeed(seed, group id)), so a group's
// output depends only on its own line, the config and the seed — not on its position or on which
// other lines are present or valid (a group can be cut out of a file and re-scored identically).
import { createRng, deriveSeed, scoreGroup, type GroupScore, type RewardConfig } from '@anneal/rl';
import { parseGroupLine } from './group-line.ts';

export interface ScoreSinks {
  /** One output line (no trailing newline). */
  out(line: string): void | Promise<void>;
  /** One diagnostic line (no trailing newline). */
  err(line: string): void;
}

export interface ScoreSummary {
  scoredGroups: number;
  badLines: number;
}

/** Score every line; line numbers are 1-based and count blank lines (which are skipped). */
export async function scoreGroupLines(
  lines: AsyncIterable<string> | Iterable<string>,
  config: RewardConfig,
  seed: number,
  sinks: ScoreSinks,
): Promise<ScoreSummary> {
  const summary: ScoreSummary = { scoredGroups: 0, badLines: 0 };
  let lineNumber = 0;
  for await (const rawText of lines) {
    lineNumber++;
    const text = lineNumber === 1 ? rawText.replace(/^\uFEFF/, '') : rawText; // tolerate a UTF-8 BOM
    if (text.trim() === '') continue;
    const parsed = parseGroupLine(text);
    if (!parsed.ok) {
      summary.badLines++;
      for (const { field, problem } of parsed.problems)
        sinks.err(`line ${lineNumber}: ${field}: ${problem}`);
      continue;
    }
    const { group, outcomes } = parsed.value;
    let score: GroupScore;
    try {
      score = scoreGroup(outcomes, config, createRng(deriveSeed(seed, group)));
    } catch (error) {
      // Validation should make this unreachable; if the math still refuses a group, report it
      // like any other bad line and keep going.
      summary.badLines++;
      sinks.err(`line ${lineNumber}: rollouts: ${(error as Error).message}`);
      continue;
    }
    const rollouts = Array.from(score.reward, (reward, i) => ({
      toolPenalty: score.toolPenalty[i],
      lengthPenalty: score.lengthPenalty[i],
      efficiencyPenalty: score.efficiencyPenalty[i],
      reward,
      advantage: score.advantage[i],
    }));
    await sinks.out(JSON.stringify({ group, toolBaseline: score.toolBaseline, rollouts }));
    summary.scoredGroups++;
  }
  return summary;
}
