import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runArtifactDir } from './artifacts.ts';

describe('runArtifactDir', () => {
  it('is <root>/runs/<runId>', () => {
    expect(runArtifactDir('/var/lib/anneal/artifacts', 'run_01JD0000000000000000000000')).toBe(
      path.join('/var/lib/anneal/artifacts', 'runs', 'run_01JD0000000000000000000000'),
    );
  });

  it.each(['', '.', '..', '../x', 'a/b', 'a\\b', 'a\0b'])('refuses %j (not one segment)', (id) => {
    expect(() => runArtifactDir('/root', id)).toThrow(/single path segment/);
  });
});
