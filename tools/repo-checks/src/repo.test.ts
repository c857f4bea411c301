// Every reference in the repository resolves inside it. A failure lists each broken reference as
// file:line, with what is missing.
import { describe, expect, it } from 'vitest';
import { diskRepo, isScanned, REPO_ROOT } from './repo.ts';
import {
  findDocCitationProblems,
  findMarkdownLinkProblems,
  findOutsideNoteProblems,
  findRecipeSectionProblems,
  findTrackerReferences,
  formatProblem,
} from './references.ts';

// The finders' own tests hold deliberately broken references.
const repo = diskRepo(REPO_ROOT, new Set(['tools/repo-checks/src/references.test.ts']));

describe('the repository', () => {
  it('scans the source, docs and config files', () => {
    const paths = repo.files.map((f) => f.path);
    expect(paths).toContain('README.md');
    expect(paths).toContain('docs/recipe.md');
    expect(paths).toContain('packages/engines/src/types.ts');
    expect(paths.some((p) => p.endsWith('Dockerfile'))).toBe(true);
    expect(isScanned('package-lock.json')).toBe(false);
  });

  it('cites only docs files, anchors and sections that exist', () => {
    expect(findDocCitationProblems(repo).map(formatProblem)).toEqual([]);
  });

  it('cites only recipe section numbers that are headings of docs/recipe.md', () => {
    expect(findRecipeSectionProblems(repo).map(formatProblem)).toEqual([]);
  });

  it('cites no notes kept outside the repository', () => {
    expect(findOutsideNoteProblems(repo).map(formatProblem)).toEqual([]);
  });

  it('has Markdown links that resolve', () => {
    expect(findMarkdownLinkProblems(repo).map(formatProblem)).toEqual([]);
  });

  it('has no tracker references', () => {
    expect(findTrackerReferences(repo).map(formatProblem)).toEqual([]);
  });
});
