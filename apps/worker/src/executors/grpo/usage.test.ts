// A GRPO step's usage is what was sent to the sampler and what it returned (docs/usage.md "What
// is metered"), recounted request by request at the engine: a group's first turn is one request
// with n = G that sends its prompt once (vLLM counts a request's prompt_tokens once for all n
// completions: vllm-project/vllm vllm/entrypoints/openai/serving_completion.py@00463e627b4cbe549b5e9815a2bdb0100ae88ea9,
// request_output_to_completion_response adds len(prompt_token_ids) per request and
// len(output.token_ids) per completion), each later turn re-sends the whole context.
import type { SampleRequest, SampledSequence } from '@anneal/engines';
import { describe, expect, it } from 'vitest';
import { METRIC } from '../metrics.ts';
import { memoryContext } from '../../../test/executors/fakes.ts';
import {
  VersionedInference,
  VersionedTrainerModel,
  fakeResources,
  grpoSpec,
} from '../../../test/executors/pipeline-fakes.ts';
import { runGrpo } from './index.ts';

const SEED = 11;

/** Every request the engine answered: context tokens sent, and tokens returned over its n. */
function recording(inference: VersionedInference) {
  const sent: Array<{ prompt: number; n: number; completion: number }> = [];
  const sample = inference.sample.bind(inference);
  inference.sample = async (request: SampleRequest, signal?: AbortSignal) => {
    const out: SampledSequence[] = await sample(request, signal);
    sent.push({
      prompt: request.prompt.length,
      n: request.n,
      completion: out.reduce((a, s) => a + s.tokens.length, 0),
    });
    return out;
  };
  return sent;
}

const total = (records: Iterable<Record<string, number | null>>, key: string) =>
  [...records].reduce((a, m) => a + (m[key] ?? 0), 0);

describe('GRPO usage counts what was sent', () => {
  it.each([0, 1])(
    'lag %i: usage/prompt_tokens is the context tokens of every request (a group prompt once), completions the tokens returned',
    async (lag) => {
      const spec = grpoSpec({
        seed: SEED,
        steps: 4,
        rollout: { maxPolicyLag: lag, groupSize: 4 },
      });
      const inference = new VersionedInference(SEED, 4);
      const model = new VersionedTrainerModel(inference);
      const sent = recording(inference);
      const ctx = memoryContext(spec, fakeResources(inference, model));
      await runGrpo(ctx);
      const records = [...ctx.steps.values()];
      expect(records).toHaveLength(4);
      // the groups' first turns were requests with n = G = 4
      expect(sent.some((r) => r.n === 4)).toBe(true);
      expect(total(records, METRIC.usagePromptTokens)).toBe(sent.reduce((a, r) => a + r.prompt, 0));
      expect(total(records, METRIC.usageCompletionTokens)).toBe(
        sent.reduce((a, r) => a + r.completion, 0),
      );
    },
  );
});
