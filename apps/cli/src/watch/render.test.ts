import { describe, expect, it } from 'vitest';
import { WatchRenderer, chooseColumns, formatValue, progressBar } from './render.ts';

function sink(isTTY: boolean, columns = 100) {
  let text = '';
  return { out: { isTTY, columns, write: (s: string) => (text += s) }, text: () => text };
}

describe('watch rendering', () => {
  it('formats values with 4 significant digits and marks unreported ones', () => {
    expect(formatValue(0.123456)).toBe('0.1235');
    expect(formatValue(12)).toBe('12');
    expect(formatValue(0.00001234)).toBe('1.23e-5');
    expect(formatValue(null)).toBe('-');
    expect(formatValue(undefined)).toBe('-');
  });

  it('chooses the kind’s columns that the first step reports, else the first keys', () => {
    expect(chooseColumns('sft', { loss: 1, grad_norm: null, other: 2 })).toEqual([
      'loss',
      'grad_norm',
    ]);
    expect(chooseColumns('rm', { b: 1, a: 2 })).toEqual(['a', 'b']);
    expect(chooseColumns('grpo', { loss: 1 }, ['x'])).toEqual(['x']);
  });

  it('draws a bar proportional to progress', () => {
    expect(progressBar(5, 10, 10)).toBe('[█████░░░░░]');
    expect(progressBar(20, 10, 4)).toBe('[████]');
  });

  it('escapes server text in state lines, checkpoint paths, notices and the summary, on a terminal too', () => {
    const hostile = '\u001b]0;title\u0007\u001b[2J\u202e';
    for (const tty of [false, true]) {
      const { out, text } = sink(tty);
      const err = sink(false);
      const r = new WatchRenderer({ runId: 'run_1', kind: 'sft', state: 'queued' }, out);
      r.stateChange('queued', 'paused', hostile);
      r.stateChange('paused', 'cancelled', hostile, `ops${hostile}`);
      r.checkpoint(3, `/a${hostile}`);
      r.notice(`anneal: notice [x]: ${hostile}`, err.out);
      r.finish(`run run_1 cancelled (${hostile})`);
      const printed = text() + err.text();
      // The renderer's own status-line codes (CR, erase line) only on a terminal; nothing else.
      const withoutOwn = printed.replaceAll('\r\u001b[2K', '');
      // eslint-disable-next-line no-control-regex
      expect(withoutOwn.replaceAll('\n', '')).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
      expect(printed).toContain('paused -> cancelled by ops\\x1b]0;title');
      expect(printed).toContain('notice [x]: \\x1b]0;title\\x07\\x1b[2J\\u202e');
    }
  });

  it('prints plain lines without control codes when not a terminal', () => {
    const { out, text } = sink(false);
    const r = new WatchRenderer(
      { runId: 'run_1', kind: 'sft', totalSteps: 2, state: 'queued' },
      out,
    );
    r.start();
    r.stateChange('queued', 'running', 'started');
    r.step(1, { loss: 2.5, grad_norm: 0.5 }, '2025-01-01T00:00:00Z');
    r.checkpoint(1, '/ckpt/1');
    r.finish('run run_1 succeeded (done)');
    expect(text()).not.toContain('\x1b');
    expect(text()).not.toContain('\r');
    expect(text().split('\n')).toEqual([
      'run run_1 (sft, 2 steps): queued',
      'state: queued -> running (started)',
      '     STEP      loss grad_norm',
      '        1       2.5       0.5',
      'checkpoint: step 1 saved to /ckpt/1',
      'run run_1 succeeded (done)',
      '',
    ]);
  });

  it('says how a paused run goes on, and keeps following it', () => {
    const { out, text } = sink(false);
    const r = new WatchRenderer({ runId: 'run_1', kind: 'sft', state: 'running' }, out);
    r.stateChange('running', 'paused', 'paused by user: requested by alice');
    r.stateChange('paused', 'queued', 'resumed by alice');
    expect(text().split('\n')).toEqual([
      'state: running -> paused (paused by user: requested by alice)',
      'paused: `anneal runs resume run_1` continues it from its checkpoint',
      'state: paused -> queued (resumed by alice)',
      '',
    ]);
  });

  it('keeps a progress line at the bottom of a terminal, redrawn after each row', () => {
    const { out, text } = sink(true);
    const r = new WatchRenderer(
      { runId: 'run_1', kind: 'sft', totalSteps: 4, state: 'running' },
      out,
    );
    r.step(1, { loss: 2 }, '2025-01-01T00:00:00Z');
    // the status line drawn under a row counts that row's step
    expect(text().endsWith(r.status())).toBe(true);
    expect(r.status()).toMatch(/ {2}1\/4 steps {2}running$/);
    r.step(2, { loss: 1 }, '2025-01-01T00:00:02Z');
    expect(r.status()).toMatch(/^\[█+░+\] {2}2\/4 steps {2}running {2}2 s\/step {2}eta 4s$/);
    r.finish('done');
    const screen = text();
    // each new line first clears the status line it replaces
    expect(screen.split('\r\x1b[2K').length - 1).toBe(3);
    expect(screen.endsWith('\r\x1b[2Kdone\n')).toBe(true);
  });

  it('fits the status line to the terminal, and assumes 80 columns when it reports 0', () => {
    const header = { runId: 'run_1', kind: 'sft', totalSteps: 4, state: 'running' } as const;
    const narrow = new WatchRenderer(header, sink(true, 30).out);
    expect(narrow.status().length).toBeLessThanOrEqual(29);
    const unknown = new WatchRenderer(header, sink(true, 0).out);
    expect(unknown.status()).toMatch(/\] {2}0\/4 steps {2}running$/);
  });
});
