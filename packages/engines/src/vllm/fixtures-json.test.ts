// The fake vLLM's directly written completion reply is the fixture object, its floats written as
// vLLM's json.dumps writes them (testing/fixtures.ts `completionResponseJson`, `pythonFloatText`).
import { describe, expect, it } from 'vitest';
import { seededRng } from '../http/timing.ts';
import {
  completionResponse,
  completionResponseJson,
  pythonFloatText,
} from '../../test/vllm/fixtures.ts';
import type { FixtureChoice, ServerShape } from '../../test/vllm/fixtures.ts';

describe('completionResponseJson', () => {
  it('writes the values of completionResponse(...), every other byte as JSON.stringify does', () => {
    const rng = seededRng(7);
    const logprob = (): number =>
      [-0, 0, -1e-7, -Math.fround(rng() * 9), -rng() * 30, -12.5][Math.floor(rng() * 6)] as number;
    const stops: FixtureChoice['stopReason'][] = [undefined, null, 151_645, '</s>'];
    let compared = 0;
    for (const shape of ['new', 'old'] as ServerShape[]) {
      for (const [tokensAsIds, logprobs] of [
        [true, true],
        [false, true],
        [true, false],
      ] as const) {
        for (const model of ['base-model', 'a "quoted" módel ✓', 'slot \u0000choices']) {
          for (let n = 0; n <= 3; n += 1) {
            const choices: FixtureChoice[] = Array.from({ length: n }, (_, k) => {
              const tokens = Array.from({ length: k * 7 }, () => Math.floor(rng() * 152_000));
              return {
                tokens,
                logprobs: tokens.map(logprob),
                finishReason: k % 2 === 0 ? 'length' : 'stop',
                stopReason: stops[k % stops.length],
              };
            });
            const prompt = [1, 22, 333];
            const object = completionResponse(shape, model, prompt, choices, {
              tokensAsIds,
              logprobs,
            });
            const written = completionResponseJson(shape, model, prompt, choices, {
              tokensAsIds,
              logprobs,
            });
            expect(JSON.parse(written)).toEqual(object);
            // floats aside (`-0.0` for -0, `-1e-07` for -1e-7), the bytes JSON.stringify writes
            const floatsAsJs = written.replace(
              /(?<=[:[,])-?\d+(?:\.\d+)?(?:e[+-]\d+)?(?=[,\]}])/g,
              (text) => JSON.stringify(Number(text)),
            );
            expect(floatsAsJs).toBe(JSON.stringify(object));
            if (!logprobs && n > 0) expect(written).toContain('"logprobs":null');
            compared += 1;
          }
        }
      }
    }
    expect(compared).toBe(72);
  });
});

describe('pythonFloatText', () => {
  it('writes floats as CPython 3 json.dumps does', () => {
    // json.dumps(xs, separators=(',', ':')) printed by CPython 3.11 for these doubles
    const xs = [
      0,
      -0,
      0.0001,
      1e-5,
      -1.5e-5,
      1e16,
      1e15,
      -12,
      -9999,
      0.1,
      Math.fround(0.1),
      2.5e-7,
      1.2345678901234567e20,
      100,
      -123.456,
      Math.fround(-4.5399931e-5),
      Math.fround(-1.2345678),
      5e-324,
      -1.7976931348623157e308,
    ];
    expect(`[${xs.map(pythonFloatText).join(',')}]`).toBe(
      '[0.0,-0.0,0.0001,1e-05,-1.5e-05,1e+16,1000000000000000.0,-12.0,-9999.0,0.1,' +
        '0.10000000149011612,2.5e-07,1.2345678901234567e+20,100.0,-123.456,' +
        '-4.539993096841499e-05,-1.2345677614212036,5e-324,-1.7976931348623157e+308]',
    );
    expect(() => pythonFloatText(Number.NaN)).toThrow(/allow_nan/);
  });
});
