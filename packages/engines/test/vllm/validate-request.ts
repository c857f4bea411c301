// The fake server's check of `/v1/completions` bodies, mirroring vLLM's 400 messages.

/** Returns vLLM's complaint about the request, or undefined when it is valid. */
export function validateCompletion(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return 'request body must be a JSON object';
  const request = body as Record<string, unknown>;
  const prompt = request['prompt'];
  if (typeof request['model'] !== 'string') return 'model: Field required';
  if (!Array.isArray(prompt) || prompt.length === 0 || !prompt.every(Number.isInteger)) {
    return 'prompt must be a non-empty list of token ids';
  }
  const n = request['n'];
  if (n !== undefined && (!Number.isInteger(n) || (n as number) < 1))
    return 'n must be at least 1.';
  const maxTokens = request['max_tokens'];
  if (maxTokens !== undefined && (!Number.isInteger(maxTokens) || (maxTokens as number) < 1)) {
    return 'max_tokens must be at least 1, got ' + String(maxTokens);
  }
  const temperature = request['temperature'];
  if (temperature !== undefined && (typeof temperature !== 'number' || temperature < 0)) {
    return 'temperature must be non-negative, got ' + String(temperature);
  }
  const topP = request['top_p'];
  if (topP !== undefined && (typeof topP !== 'number' || topP <= 0 || topP > 1)) {
    return 'top_p must be in (0, 1], got ' + String(topP);
  }
  const logprobs = request['logprobs'];
  if (logprobs !== undefined && logprobs !== null && !Number.isInteger(logprobs)) {
    return 'logprobs must be an integer';
  }
  // `priority: int` (vllm/entrypoints/openai/completion/protocol.py@002032ee), any policy.
  const priority = request['priority'];
  if (priority !== undefined && !Number.isInteger(priority)) {
    return 'priority: Input should be a valid integer';
  }
  return undefined;
}
