// How `anneal runs rollouts` prints rollouts: one block per rollout (header, reward breakdown,
// advantage and IS ratios, then prompt, turns with their tool calls, answer and rubric checks),
// and `--vs RUN` as two columns per prompt. Pure functions over the API's records.
import type { ListedRollout, RolloutRecord } from '@anneal/protocol';
import { clip, num, signed } from './record-format.ts';
import { terminalSafe } from '../ops/terminal-text.ts';

export function rolloutHeader(r: ListedRollout): string {
  const version = r.policyVersion === null ? 'reference model' : `policy v${r.policyVersion}`;
  return `── ${r.id}  step ${r.step} · group ${r.group} · ${r.role} #${r.index} · ${version} · prompt ${r.promptId}`;
}

/** R = r_base·s − pen_eff (tool, length), Â, ratio mean [min, max] and k3. */
export function rewardLine(r: ListedRollout): string {
  const parts: string[] = [];
  if (r.rewards) {
    const w = r.rewards;
    parts.push(
      `R ${num(w.reward)} = r_base ${num(w.baseReward, 0)} · s ${num(w.preferenceScore)} − pen ${num(w.efficiencyPenalty)} (tool ${num(w.toolPenalty)}, len ${num(w.lengthPenalty)})`,
    );
  }
  if (r.advantage !== null) parts.push(`Â ${signed(r.advantage)}`);
  if (r.ratio) {
    parts.push(
      `ratio ${num(r.ratio.mean, 4)} [${num(r.ratio.min, 4)}, ${num(r.ratio.max, 4)}] k3 ${r.ratio.k3.toExponential(2)}`,
    );
  }
  return parts.length > 0 ? parts.join('   ') : 'not scored (reference rollout)';
}

export function rolloutBlock(r: ListedRollout | RolloutRecord): string {
  const lines = [
    rolloutHeader(r),
    rewardLine(r),
    `finish ${r.finish}${r.truncated ? ' (truncated)' : ''} · ${r.lengths.generated} generated / ${r.lengths.response} response tokens · ${r.toolCalls} tool calls, ${r.toolErrors} failed`,
    `prompt (${r.lengths.prompt} tok, ${r.source}/${r.exampleId}): ${clip(r.prompt.text)}`,
  ];
  r.turns.forEach((turn, t) => {
    lines.push(`turn ${t + 1}: ${clip(turn.assistant)}`);
    for (const call of turn.calls) {
      const outcome =
        call.status === 'ok'
          ? `${call.resultCount} results: ${clip(call.result, 120)}`
          : `${call.status}${call.error ? `: ${clip(call.error, 120)}` : ''}`;
      lines.push(
        terminalSafe(`  → ${call.name}(${JSON.stringify(call.arguments.query)}) ${outcome}`),
      );
    }
  });
  lines.push(`answer: ${r.answer === null ? '(none)' : clip(r.answer)}`);
  for (const check of r.checks ?? []) {
    const mark = check.passed === null ? '?' : check.passed ? '✓' : '✗';
    lines.push(`  ${mark} ${clip(check.text, 120)} (${check.by})`);
  }
  if ('tokens' in r && r.tokens) {
    lines.push(
      `tokens: ${r.tokens.ids.length} after the prompt, ${r.tokens.generated.length} generated (--json for ids and logprobs)`,
    );
  }
  // every line printable: the dataset's ids and the model's tool calls reach here unclipped
  return lines.map(terminalSafe).join('\n');
}

/** Fits `text` to `width` columns (clipped or padded). */
function cell(text: string, width: number): string {
  const flat = terminalSafe(text.replace(/[\r\n\t]+/g, ' ')); // one line; indentation kept
  return flat.length <= width ? flat.padEnd(width) : `${flat.slice(0, width - 1)}…`;
}

function shortLine(r: ListedRollout): string[] {
  const calls = r.turns.flatMap((t) =>
    t.calls.map((c) =>
      terminalSafe(`${c.name}(${JSON.stringify(c.arguments.query)})${c.failed ? '!' : ''}`),
    ),
  );
  return [
    `${r.id}  R ${num(r.rewards?.reward)}  Â ${signed(r.advantage)}  ${r.finish}`,
    `  answer: ${r.answer ?? '(none)'}`,
    `  tools: ${calls.length > 0 ? calls.join(' ') : '(none)'}`,
  ];
}

const meanReward = (rs: readonly ListedRollout[]): string => {
  const scored = rs.flatMap((r) => (r.rewards ? [r.rewards.reward] : []));
  return scored.length === 0 ? '-' : num(scored.reduce((a, b) => a + b, 0) / scored.length);
};

/** One prompt in two runs, side by side: each side's rollouts (R, Â, answer, tool calls). */
export function versusBlock(
  promptId: string,
  promptText: string,
  left: { run: string; rollouts: readonly ListedRollout[] },
  right: { run: string; rollouts: readonly ListedRollout[] },
  width = 60,
): string {
  const side = (s: typeof left) => [
    `${s.run} (${s.rollouts.length} rollouts, mean R ${meanReward(s.rollouts)})`,
    ...(s.rollouts.length === 0
      ? ['(this prompt has no rollouts here)']
      : s.rollouts.flatMap(shortLine)),
  ];
  const a = side(left);
  const b = side(right);
  const rows = Array.from({ length: Math.max(a.length, b.length) }, (_, i) =>
    `${cell(a[i] ?? '', width)} │ ${cell(b[i] ?? '', width)}`.trimEnd(),
  );
  return [`══ prompt ${promptId}: ${clip(promptText, width * 2)}`, ...rows].join('\n');
}
