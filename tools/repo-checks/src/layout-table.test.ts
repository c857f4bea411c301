// The layout tables on a small synthetic tree (each kind of drift is reported), then on the
// repository: the READMEs listed in LAYOUT_TABLES name exactly the source files of their folders.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { layoutProblems, layoutRows } from './layout-table.ts';
import { REPO_ROOT, gitFiles } from './repo.ts';

/** README → the folders (relative to it) whose every source folder needs a row. */
const LAYOUT_TABLES: Record<string, string[]> = {
  'apps/control-plane/README.md': ['src/', 'console/src/'],
};

const README = [
  '# x',
  '## Layout',
  '',
  '| folder | concern | files |',
  '| --- | --- | --- |',
  '| `src/` | wiring, `buildApp` | `app.ts`, `server.ts` |',
  '| `src/jobs/` | loops | `outbox.ts` |',
  '',
  '## Next',
  '| `src/ignored/` | after the section | `nope.ts` |',
].join('\n');

describe('layoutRows', () => {
  it('reads folder rows of the Layout section only, files from the last column', () => {
    expect(layoutRows(README)).toEqual([
      { folder: 'src/', files: ['app.ts', 'server.ts'], line: 6 },
      { folder: 'src/jobs/', files: ['outbox.ts'], line: 7 },
    ]);
  });

  it('fails on a README without the section', () => {
    expect(() => layoutRows('# x\n## Other\n')).toThrow('no "## Layout" heading');
  });
});

describe('layoutProblems', () => {
  const rows = layoutRows(README);
  const tree = ['src/app.ts', 'src/server.ts', 'src/app.test.ts', 'src/jobs/outbox.ts'];

  it('finds nothing when the table and the tree agree (tests and other folders aside)', () => {
    expect(layoutProblems(rows, [...tree, 'test/helpers.ts', 'src/x.json'], ['src/'])).toEqual([]);
  });

  it('reports a source file its folder row does not name', () => {
    expect(layoutProblems(rows, [...tree, 'src/jobs/sweep.ts'], ['src/'])).toEqual([
      { line: 7, message: '`src/jobs/sweep.ts` is missing from the `src/jobs/` row' },
    ]);
  });

  it('reports a listed file that does not exist (moved or deleted)', () => {
    const moved = tree.map((f) => f.replace('src/jobs/', 'src/infra/'));
    const problems = layoutProblems(rows, moved, ['src/']);
    expect(problems).toContainEqual({
      line: 7,
      message: '`src/jobs/outbox.ts` is listed but is not a source file of the tree',
    });
    expect(problems).toContainEqual({
      line: 0,
      message: '`src/infra/` holds outbox.ts but has no row',
    });
  });

  it('reports a second row for one folder', () => {
    const twice = layoutRows(`${README}`.replace('## Next', '| `src/` | again | |\n## Next'));
    expect(layoutProblems(twice, tree, ['src/'])).toContainEqual({
      line: 9,
      message: '`src/` has a second row',
    });
  });
});

describe('the layout tables of the repository', () => {
  const files = gitFiles(REPO_ROOT);
  for (const [readme, roots] of Object.entries(LAYOUT_TABLES)) {
    it(`${readme} names every source file of its folders, and only those`, () => {
      const dir = `${path.posix.dirname(readme)}/`;
      const rows = layoutRows(readFileSync(path.join(REPO_ROOT, readme), 'utf8'));
      const under = files.filter((f) => f.startsWith(dir)).map((f) => f.slice(dir.length));
      const problems = layoutProblems(rows, under, roots).map(
        (p) => `${readme}:${p.line}: ${p.message}`,
      );
      expect(problems).toEqual([]);
    });
  }
});
