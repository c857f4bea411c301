// The fake vLLM's directly written completion reply is JSON.stringify of the fixture object,
// byte for byte (testing/fixtures.ts `completionResponseJson`).
import { describe, expect, it } from 'vitest';
import { seededRng } from '../http/timing.ts';
import { completionResponse, completionResponseJson } from '../../test/vllm/fixtures.ts';
import type { FixtureChoice, ServerShape } from '../../test/vllm/fixtures.ts';

describe('completionResponseJson', () => {
  it('writes the same bytes as JSON.stringify(completionResponse(...))', () => {
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
            const expected = JSON.stringify(
              completionResponse(shape, model, prompt, choices, { tokensAsIds, logprobs }),
            );
            expect(
              completionResponseJson(shape, model, prompt, choices, { tokensAsIds, logprobs }),
            ).toBe(expected);
            if (!logprobs && n > 0) expect(expected).toContain('"logprobs":null');
            compared += 1;
          }
        }
      }
    }
    expect(compared).toBe(72);
  });
});
