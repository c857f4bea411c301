// Hash routes and links: what a pasted, bookmarked or hand-edited link opens.
import { describe, expect, it } from 'vitest';
import { compareHref, hrefWith, parseRoute, runHref, sweepHref } from './router.ts';

describe('parseRoute', () => {
  it('opens the runs list for an empty hash, a bare #, and unknown paths, keeping the query', () => {
    for (const hash of ['', '#', '#/', '#/nowhere/else']) {
      expect(parseRoute(hash).page).toBe('runs');
    }
    const route = parseRoute('#/runs?state=running&label=a&label=b');
    expect(route.page).toBe('runs');
    expect(route.page === 'runs' && route.query.getAll('label')).toEqual(['a', 'b']);
    expect(route.page === 'runs' && route.query.get('state')).toBe('running');
  });

  it('opens a comparison of the runs a link names, and a sweep by id', () => {
    const link = compareHref(['run_a', 'run_b']);
    expect(link).toBe('#/compare?run=run_a&run=run_b');
    expect(parseRoute(link)).toEqual({ page: 'compare', runs: ['run_a', 'run_b'] });
    expect(parseRoute(sweepHref('sweep_1'))).toEqual({ page: 'sweep', id: 'sweep_1' });
    expect(parseRoute('#/sweeps').page).toBe('runs');
  });

  it('opens a run, its rollouts and its items by id, with their filters', () => {
    expect(parseRoute('#/runs/r-1')).toEqual({ page: 'run', id: 'r-1' });
    expect(parseRoute('#/runs/r-1/')).toEqual({ page: 'run', id: 'r-1' });
    const rollouts = parseRoute('#/runs/r-1/rollouts?step=3&sort=reward');
    expect(rollouts.page).toBe('rollouts');
    expect(rollouts.page === 'rollouts' && [rollouts.id, rollouts.query.toString()]).toEqual([
      'r-1',
      'step=3&sort=reward',
    ]);
    const items = parseRoute('#/runs/r-1/items?correct=false');
    expect(items.page === 'items' && [items.id, items.query.get('correct')]).toEqual([
      'r-1',
      'false',
    ]);
  });

  it('decodes a percent-encoded id (the inverse of runHref)', () => {
    const id = 'run/with spaces?&#é';
    expect(parseRoute(runHref(id))).toEqual({ page: 'run', id });
    expect(runHref(id)).not.toContain(' ');
  });

  it('names the broken part of a malformed link instead of opening a blank page', () => {
    expect(() => parseRoute('#/runs/%E0%A4%A')).toThrow(
      "this link is malformed: '%E0%A4%A' is not valid percent-encoding",
    );
    expect(() => parseRoute('#/runs/100%/rollouts')).toThrow("'100%'");
  });
});

describe('hrefWith', () => {
  it('leaves out undefined and empty values, and the ? when nothing is left', () => {
    expect(hrefWith('#/runs', {})).toBe('#/runs');
    expect(hrefWith('#/runs', { state: undefined, kind: '' })).toBe('#/runs');
    expect(hrefWith('#/runs', { state: 'failed', kind: undefined })).toBe('#/runs?state=failed');
  });

  it('repeats a key for a list and encodes values so parseRoute reads them back', () => {
    const href = hrefWith('#/runs/r/rollouts', { label: ['a=1', 'b&c'], q: 'x y' });
    expect(href).toBe('#/runs/r/rollouts?label=a%3D1&label=b%26c&q=x+y');
    const route = parseRoute(href);
    expect(route.page === 'rollouts' && route.query.getAll('label')).toEqual(['a=1', 'b&c']);
    expect(route.page === 'rollouts' && route.query.get('q')).toBe('x y');
  });
});
