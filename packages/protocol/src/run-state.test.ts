import { describe, expect, it } from 'vitest';
import { RUN_TRANSITIONS, canTransition } from './run-state.ts';
import { RUN_STATES, isTerminal } from './run-states.ts';

describe('run state machine', () => {
  it('follows queued -> running -> terminal, with retrying after a lost worker', () => {
    expect(canTransition('queued', 'running')).toBe(true);
    expect(canTransition('running', 'retrying')).toBe(true);
    expect(canTransition('retrying', 'running')).toBe(true);
    expect(canTransition('running', 'succeeded')).toBe(true);
    expect(canTransition('queued', 'succeeded')).toBe(false);
    expect(canTransition('queued', 'retrying')).toBe(false);
  });

  it('pauses a waiting or running run, and leaves paused only by a resume (queued) or a cancel', () => {
    for (const from of ['queued', 'running', 'retrying'] as const) {
      expect(canTransition(from, 'paused')).toBe(true);
    }
    expect(RUN_TRANSITIONS.paused).toEqual(['queued', 'cancelled']);
    expect(canTransition('paused', 'running')).toBe(false);
    expect(isTerminal('paused')).toBe(false);
  });

  it('has no transition out of a terminal state', () => {
    for (const state of RUN_STATES) {
      expect(RUN_TRANSITIONS[state].length === 0).toBe(isTerminal(state));
    }
  });
});
