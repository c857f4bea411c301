// The same-run baseline of bench/overhead's regression bound (`--soak`): CPU per token of the
// plainest way to read the policy tokens of a step from vLLM — `JSON.parse` of `/v1/completions`
// replies as the fake vLLM writes them (16 choices × 4096 tokens, ids and logprobs), nothing
// else. It moves with the machine's speed and load as the orchestrator's CPU does, so their
// ratio can be compared across runs and machines.
import { completionResponseJson, fakeLogprob } from '@anneal/engines/testing';

/** CPU milliseconds per token of JSON.parse over `replies` replies of `choices` × `tokens`
 * tokens (median of `rounds`). */
export function jsonParseCpuPerToken(
  replies: number,
  choices: number,
  tokens: number,
  rounds = 5,
): number {
  const body = completionResponseJson(
    'new',
    'qwen3-base',
    [1, 2, 3],
    Array.from({ length: choices }, (_, c) => {
      const ids = Array.from({ length: tokens }, (_, t) => (31 * c + 7 * t) % 32_000);
      return {
        tokens: ids,
        logprobs: ids.map(fakeLogprob),
        finishReason: 'length',
      };
    }),
  );
  const perRound: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const cpu = process.cpuUsage();
    for (let r = 0; r < replies; r++) JSON.parse(body);
    const used = process.cpuUsage(cpu);
    perRound.push((used.user + used.system) / 1000 / (replies * choices * tokens));
  }
  return perRound.sort((a, b) => a - b)[Math.floor(rounds / 2)]!;
}
