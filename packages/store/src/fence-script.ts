// The fencing clause of the Lua scripts that write a running run's history (scripts.ts,
// guardrail-scripts.ts).

/** Fencing shared by step and checkpoint writes: ARGV[fence] is the writer's attempt number
 * ('' = unfenced). A write from an earlier attempt (a worker that lost the run) is refused and
 * counted on the run (\`fencedWrites\`). */
export const FENCE = (arg: number) => `
if ARGV[${arg}] ~= '' then
  local attempt = redis.call('HGET', KEYS[1], 'attempt') or ''
  if attempt ~= ARGV[${arg}] or redis.call('HGET', KEYS[1], 'state') ~= 'running' then
    redis.call('HINCRBY', KEYS[1], 'fencedWrites', 1)
    return {'fenced', attempt, redis.call('HGET', KEYS[1], 'state') or ''}
  end
end
`;
