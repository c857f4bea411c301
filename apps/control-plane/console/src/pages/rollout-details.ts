// One rollout expanded: its prompt, each turn's text and tool calls with what they returned,
// the answer, the reward parts (docs/recipe.md §4), advantage and IS ratios, rubric checks, and
// links to the paired rollout and to the same prompt across steps. With the run's
// `ledger.tokens`, the tokens whose sampler and trainer logprobs differ most.
import { apiJson, runPath } from '../api.ts';
import { errorLine, fill, h } from '../dom.ts';
import { num } from '../format.ts';
import { hrefWith } from '../router.ts';
import { decodeLogprobs, type RolloutRecord } from '@anneal/protocol';

function facts(pairs: [string, string | number][]): HTMLElement {
  return h(
    'dl',
    { class: 'facts small' },
    ...pairs.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, String(v))]),
  );
}

function turns(r: RolloutRecord): HTMLElement {
  return h(
    'ol',
    { class: 'turns' },
    ...r.turns.map((turn, i) =>
      h(
        'li',
        { class: 'turn' },
        h('div', { class: 'sub' }, `turn ${i + 1}`),
        h('pre', { class: 'assistant' }, turn.assistant),
        ...turn.calls.map((call) =>
          h(
            'div',
            { class: `call ${call.failed ? 'failed' : ''}` },
            h('code', {}, `${call.name}(${JSON.stringify(call.arguments.query)})`),
            ` → ${call.status}, ${call.resultCount} results`,
            call.error ? h('span', { class: 'error' }, ` ${call.error}`) : null,
            call.result
              ? h(
                  'pre',
                  { class: 'result' },
                  call.result + (call.resultChars > call.result.length ? ' …' : ''),
                )
              : null,
          ),
        ),
      ),
    ),
  );
}

async function tokenDiffs(
  section: HTMLElement,
  runId: string,
  r: RolloutRecord,
  signal: AbortSignal,
) {
  const full = await apiJson<RolloutRecord>(
    `${runPath(runId)}/rollouts/${encodeURIComponent(r.id)}`,
    signal,
  );
  if (!full.tokens?.trainerLogprobs || !full.tokens.samplerLogprobs) {
    fill(
      section,
      h('p', { class: 'sub' }, 'This run did not record token logprobs (spec ledger.tokens).'),
    );
    return;
  }
  const sampler = decodeLogprobs(full.tokens.samplerLogprobs);
  const trainer = decodeLogprobs(full.tokens.trainerLogprobs);
  const rows = [...sampler.keys()]
    .map((i) => ({
      i,
      id: full.tokens!.ids[full.tokens!.generated[i]!],
      samplerLogprob: sampler[i]!,
      trainerLogprob: trainer[i]!,
    }))
    .sort(
      (a, b) =>
        Math.abs(b.samplerLogprob - b.trainerLogprob) -
        Math.abs(a.samplerLogprob - a.trainerLogprob),
    )
    .slice(0, 10);
  fill(
    section,
    h('h4', {}, `Largest sampler − trainer logprob gaps (${sampler.length} generated tokens)`),
    h(
      'table',
      {},
      h(
        'thead',
        {},
        h('tr', {}, ...['#', 'token id', 'sampler', 'trainer', 'Δ'].map((c) => h('th', {}, c))),
      ),
      h(
        'tbody',
        {},
        ...rows.map((row) =>
          h(
            'tr',
            {},
            h('td', {}, row.i),
            h('td', {}, row.id ?? '–'),
            h('td', {}, num(row.samplerLogprob)),
            h('td', {}, num(row.trainerLogprob)),
            h('td', {}, num(row.samplerLogprob - row.trainerLogprob)),
          ),
        ),
      ),
    ),
  );
}

export function rolloutDetails(
  r: RolloutRecord,
  runId: string,
  base: string,
  signal: AbortSignal,
): HTMLElement {
  const rewards = r.rewards;
  const tokenSection = h('div', { class: 'tokens' });
  const tokenButton = h('button', { type: 'button', class: 'link' }, 'Token logprobs');
  tokenButton.addEventListener('click', () => {
    fill(tokenSection, h('p', { class: 'sub' }, 'Loading…'));
    tokenDiffs(tokenSection, runId, r, signal).catch((error: unknown) =>
      fill(tokenSection, errorLine(error)),
    );
  });
  return h(
    'div',
    { class: 'rollout-body' },
    h(
      'p',
      { class: 'links' },
      h('a', { href: hrefWith(base, { prompt: r.promptId }) }, 'This prompt across steps'),
      ' · ',
      h(
        'a',
        { href: hrefWith(base, { step: String(r.step), prompt: r.promptId }) },
        `Its group at step ${r.step}`,
      ),
      ' · paired with ',
      h('code', {}, r.pairedWith),
      ' · ',
      tokenButton,
    ),
    facts([
      ['step', r.step],
      ['group', r.group],
      ['policy version', r.policyVersion ?? 'reference'],
      ['source', `${r.source} (${r.component})`],
      ['example', r.exampleId],
      [
        'lengths (tokens)',
        `${r.lengths.prompt} prompt / ${r.lengths.generated} generated / ${r.lengths.response} response / ${r.lengths.total} total`,
      ],
      ['truncated', r.truncated ? 'yes' : 'no'],
    ]),
    h('h4', {}, 'Prompt'),
    h('pre', { class: 'prompt' }, r.prompt.text),
    h('h4', {}, 'Turns'),
    turns(r),
    h('h4', {}, 'Answer'),
    h('pre', { class: 'answer' }, r.answer ?? '(none)'),
    rewards
      ? h(
          'div',
          {},
          h('h4', {}, 'Reward R = r_base · s − pen_eff'),
          facts([
            ['r_base (base reward)', num(rewards.baseReward)],
            ['s (preference score)', num(rewards.preferenceScore)],
            ['pen_tool (tool penalty)', num(rewards.toolPenalty)],
            ['pen_len (length penalty)', num(rewards.lengthPenalty)],
            ['pen_eff (efficiency penalty)', num(rewards.efficiencyPenalty)],
            ['R (reward)', num(rewards.reward)],
            ['Â (advantage)', num(r.advantage)],
          ]),
        )
      : null,
    r.ratio
      ? h(
          'div',
          {},
          h('h4', {}, 'IS ratio exp(logp_train − logp_infer)'),
          facts([
            ['mean', num(r.ratio.mean)],
            ['min', num(r.ratio.min)],
            ['max', num(r.ratio.max)],
            ['k3', num(r.ratio.k3)],
            ['generated tokens', r.ratio.generated],
          ]),
        )
      : null,
    r.checks
      ? h(
          'div',
          {},
          h('h4', {}, 'Rubric checks'),
          h(
            'ul',
            { class: 'checks' },
            ...r.checks.map((c) =>
              h(
                'li',
                { class: c.passed === true ? 'pass' : c.passed === false ? 'fail' : '' },
                `${c.passed === true ? '✓' : c.passed === false ? '✗' : '?'} ${c.text} (${c.by})`,
              ),
            ),
          ),
        )
      : null,
    tokenSection,
  );
}
