// The run states as plain data, the one list of them and of the terminal ones (run-state.ts holds
// their schemas and transitions). A module importing nothing, so the web console's bundle takes
// `isTerminal` without a schema.

export const RUN_STATES = [
  'queued',
  'running',
  'retrying',
  'paused',
  'succeeded',
  'failed',
  'cancelled',
] as const;
export type RunState = (typeof RUN_STATES)[number];
/** The states a run never leaves. */
export const TERMINAL_STATES: ReadonlySet<RunState> = new Set(['succeeded', 'failed', 'cancelled']);

export function isTerminal(state: RunState): boolean {
  return TERMINAL_STATES.has(state);
}
