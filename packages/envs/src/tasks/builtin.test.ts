import { beforeAll, describe, expect, it } from 'vitest';
import { ScriptedEngine } from '../../test/support/scriptedEngine.ts';
import { runRolloutGroup } from '../rollout/loop.ts';
import { parseSegment } from '../rollout/parse.ts';
import type { SegmentAction } from '../rollout/parse.ts';
import { runCheck } from '../rubrics/programmatic.ts';
import { verifyAnswer } from '../verify/answer.ts';
import { builtinTasks } from './builtin.ts';
import type { BuiltinTasks } from './builtin.ts';
import { readFact } from './corpus.ts';
import type { SftDemo } from './types.ts';

let tasks: BuiltinTasks;
beforeAll(() => {
  tasks = builtinTasks(42);
});

const data = (t: BuiltinTasks) =>
  JSON.stringify({
    c: t.corpus,
    qa: t.qa,
    tf: t.toolFree,
    r: t.rubric,
    sft: t.sft,
    p: t.preference,
  });

/** Generated segments of a demo: the model's tokens between environment blocks. */
function segments(demo: SftDemo): number[][] {
  const out: number[][] = [[]];
  demo.tokens.slice(demo.promptLength).forEach((t, i) => {
    if (demo.lossMask[demo.promptLength + i] === 1) out[out.length - 1]!.push(t);
    else if (out[out.length - 1]!.length > 0) out.push([]);
  });
  return out.filter((s) => s.length > 0);
}

describe('builtinTasks', () => {
  it('is deterministic for a seed and differs across seeds', () => {
    expect(data(builtinTasks(42))).toBe(data(tasks));
    expect(data(builtinTasks(43))).not.toBe(data(tasks));
  });

  it('has the requested sizes and disjoint train/eval splits', () => {
    expect([
      tasks.qa.train.length,
      tasks.qa.eval.length,
      tasks.toolFree.train.length,
      tasks.toolFree.eval.length,
    ]).toEqual([160, 40, 64, 24]);
    const trainQ = new Set([...tasks.qa.train, ...tasks.toolFree.train].map((q) => q.question));
    const evalQ = [...tasks.qa.eval, ...tasks.toolFree.eval].map((q) => q.question);
    expect(evalQ.filter((q) => trainQ.has(q))).toEqual([]);
    expect(new Set(evalQ).size).toBe(evalQ.length);
    const heldOut = new Set(tasks.preference.heldOut.map((p) => p.promptId));
    expect(tasks.preference.train.filter((p) => heldOut.has(p.promptId))).toEqual([]);
    expect(tasks.preference.heldOut.length).toBe(Math.round(0.2 * tasks.sft.length));
  });

  it('mostly asks 1-hop questions, balanced over the three question types', () => {
    const all = [...tasks.qa.train, ...tasks.qa.eval];
    expect(all.filter((q) => q.hops === 1)).toHaveLength(170);
    expect(all.filter((q) => q.hops === 2)).toHaveLength(30);
    const types = new Set(all.map((q) => q.question.split(' ')[0]));
    expect(types).toEqual(new Set(['Where', 'Which', 'Who']));
  });

  it('every QA answer is reachable through the search_web tool', async () => {
    for (const qa of [...tasks.qa.train, ...tasks.qa.eval]) {
      const session = tasks.createTool().session();
      const chain = qa.chain!;
      let current = chain.entities[0]!;
      expect(qa.question).toContain(current); // only the anchor is named …
      for (const named of chain.entities.slice(1)) expect(qa.question).not.toContain(named); // … name-free otherwise
      for (const relation of chain.relations) {
        const record = await session.call(current);
        current = readFact(record.output, current, relation)!;
      }
      expect(current).toBe(qa.answer);
      expect(session.calls).toBe(qa.hops);
    }
  });

  it('no single fact links the anchor and the answer of a multi-hop question', () => {
    for (const qa of tasks.qa.train.filter((q) => q.hops > 1)) {
      const [anchor, answer] = [qa.chain!.entities[0], qa.answer];
      const direct = tasks.corpus.facts.filter(
        (f) =>
          (f.subject === anchor && f.object === answer) ||
          (f.subject === answer && f.object === anchor),
      );
      expect(direct).toEqual([]);
    }
  });

  it('tool-free questions are answerable from the question alone', () => {
    for (const qa of [...tasks.toolFree.train, ...tasks.toolFree.eval]) {
      expect(qa.needsSearch).toBe(false);
      const sum = /^(\d)([+-])(\d)\?$/.exec(qa.question);
      if (sum) {
        const value =
          sum[2] === '+' ? Number(sum[1]) + Number(sum[3]) : Number(sum[1]) - Number(sum[3]);
        expect(verifyAnswer(String(value), qa)).toBe(true);
      } else {
        expect(qa.question.split(/[?.] ?/)[0]).toContain(qa.answer); // the fact is stated first
        expect(tasks.search.searchSync(qa.answer, 1)).toEqual([]); // and its names are not in the corpus
      }
    }
  });

  it('rubric references pass their own programmatic rubrics', () => {
    expect(tasks.rubric).toHaveLength(24);
    for (const r of tasks.rubric)
      for (const rubric of r.rubrics) expect(runCheck(rubric.check!, r.reference)).toBe(true);
  });

  it('SFT demos fit a 200-token context and parse in the tool-call format', () => {
    for (const demo of tasks.sft) {
      expect(demo.tokens.length).toBeLessThanOrEqual(200);
      expect(tasks.format.tokenizer.decode(demo.tokens)).toBe(demo.text);
      const actions = segments(demo).map((s) => parseSegment(s, tasks.format));
      const expected = demo.turns.flatMap((t): SegmentAction[] =>
        'call' in t
          ? [{ kind: 'call', query: t.call }]
          : 'answer' in t
            ? [{ kind: 'answer', answer: t.answer }]
            : [],
      );
      expect(actions).toEqual(expected);
    }
    const redundant = tasks.sft.filter((d) => d.redundantCall);
    expect(redundant.every((d) => d.source === 'tool_free')).toBe(true);
    const rate = redundant.length / tasks.toolFree.train.length;
    expect(rate).toBeGreaterThan(0.15);
    expect(rate).toBeLessThan(0.45);
  });

  it('SFT demos are exactly what the rollout loop produces when the model follows them', async () => {
    for (const demo of tasks.sft.filter((_, i) => i % 7 === 0)) {
      const script = segments(demo).map((s) => tasks.format.tokenizer.decode(s));
      let turn = 0;
      const engine = new ScriptedEngine(() => script[turn++] ?? '');
      const env = {
        engine,
        format: tasks.format,
        tool: tasks.createTool(),
        config: { maxContextTokens: 200, maxResponseTokens: 200, temperature: 1, topP: 1 },
      };
      const [rollout] = await runRolloutGroup(env, {
        prompt: tasks.format.encodePrompt(demo.prompt),
        n: 1,
      });
      expect(Array.from(rollout!.tokens)).toEqual(demo.tokens);
      expect(Array.from(rollout!.lossMask)).toEqual(demo.lossMask);
    }
  });

  it('preference pairs prefer the concise, well-formed answer with the same content', () => {
    for (const pair of [...tasks.preference.train, ...tasks.preference.heldOut]) {
      expect(pair.chosen).not.toBe(pair.rejected);
      expect(pair.chosen).toMatch(/<\|answer\|>[^<]*<\|eos\|>$/);
      const answer = /<\|answer\|>([^<]*)<\|eos\|>$/.exec(pair.chosen)![1]!;
      expect(pair.rejected).toContain(answer);
      expect(
        pair.tokens.prompt.length +
          Math.max(pair.tokens.chosen.length, pair.tokens.rejected.length),
      ).toBeLessThanOrEqual(200);
    }
    const flaws = new Set(tasks.preference.train.map((p) => p.flaw));
    expect(flaws).toEqual(new Set(['verbose', 'repeated', 'no_answer_marker', 'trailing_noise']));
  });

  it('mixes prompts 90/10 between QA and rubric sources', () => {
    const mix = tasks.createMix(5);
    const batch = mix.batch(20);
    expect(batch.filter((d) => d.source === 'rubric')).toHaveLength(2);
    expect(
      batch.every((d) => (d.source === 'qa' ? d.item.kind === 'qa' : d.item.kind === 'rubric')),
    ).toBe(true);
  });

  it('makes hop counts configurable (3-hop chains still fit the context)', () => {
    const deep = builtinTasks(3, { trainQa: 20, evalQa: 5 }, { hopWeights: { 1: 0, 2: 0, 3: 1 } });
    expect(
      [...deep.qa.train, ...deep.qa.eval].every(
        (q) => q.hops === 3 && q.chain!.entities.length === 4,
      ),
    ).toBe(true);
    expect(Math.max(...deep.sft.map((d) => d.tokens.length))).toBeLessThanOrEqual(200);
  });

  it('explains when the corpus is too small for the requested questions', () => {
    expect(() =>
      builtinTasks(1, { persons: 6, towns: 2, lands: 2, trainQa: 100, evalQa: 10 }),
    ).toThrow(/raise sizes\.persons/);
  });
});
