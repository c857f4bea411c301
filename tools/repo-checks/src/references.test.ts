// The finders on a small synthetic tree: each kind of broken reference is reported with its
// file:line, and the valid forms the repository uses are not.
import { describe, expect, it } from 'vitest';
import { githubSlug, parseMarkdown } from './markdown.ts';
import {
  findBrokenReferences,
  findDocCitationProblems,
  findMarkdownLinkProblems,
  findOutsideNoteProblems,
  findRecipeSectionProblems,
  findTrackerReferences,
  formatProblem,
  type Repo,
} from './references.ts';

const RECIPE_DOC = [
  '# Recipe',
  '## 1. Two stages',
  '### 1.1 SFT warm-up',
  'Cross-entropy on completion tokens.',
  '## 2. GRPO objective',
  '**Decision**: token-level ratios.',
  '## 3. RL data',
  'The prompt mix is 90/10.',
].join('\n');

const ENGINES_DOC = [
  '# Engines',
  '## Reduction',
  '## Tuning (why these numbers)',
  '<a id="custom-anchor"></a>',
  '```',
  '## Not a heading',
  '```',
].join('\n');

/** A repo whose `docs/` and extra paths exist, and whose scanned files are `files`. */
function fakeRepo(files: Record<string, string>, extraPaths: string[] = []): Repo {
  const docs: Record<string, string> = {
    'docs/recipe.md': RECIPE_DOC,
    'docs/engines.md': ENGINES_DOC,
  };
  const all: Record<string, string> = { ...docs, ...files };
  const dirs = new Set<string>();
  for (const p of [...Object.keys(all), ...extraPaths]) {
    const parts = p.split('/');
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  }
  return {
    files: Object.entries(files).map(([path, text]) => ({ path, text })),
    read: (p) => all[p],
    exists: (p) => p in all || extraPaths.includes(p) || dirs.has(p.replace(/\/$/, '')),
  };
}

const messages = (problems: ReturnType<typeof findBrokenReferences>) => problems.map(formatProblem);

describe('findDocCitationProblems', () => {
  it('accepts the citation forms the code uses', () => {
    const repo = fakeRepo({
      'a.ts': [
        '// see docs/engines.md "Reduction" and `docs/engines.md` "Reduction"',
        '// docs/engines.md ("Tuning") and docs/engines.md#custom-anchor and docs/engines.md#reduction',
        '// docs/recipe.md §1.1, docs/recipe.md §2 "Decision", docs/recipe.md §3 "prompt mix".',
        "const p = ['docs/recipe.md', \"docs/engines.md\", 'x'];",
        "const q = join('../../docs/elsewhere.md');",
      ].join('\n'),
    });
    expect(messages(findDocCitationProblems(repo))).toEqual([]);
  });

  it('reports a missing file, section, number, phrase and anchor with file:line', () => {
    const repo = fakeRepo({
      'b.ts': [
        '// docs/missing.md',
        '// docs/engines.md "Not a heading"',
        '// docs/recipe.md §9 and docs/recipe.md §1.2',
        '// docs/recipe.md §3 "Decision"',
        '// docs/engines.md#nowhere',
      ].join('\n'),
    });
    expect(messages(findDocCitationProblems(repo))).toEqual([
      'b.ts:1: docs/missing.md does not exist',
      'b.ts:2: docs/engines.md has no section "Not a heading"',
      'b.ts:3: docs/recipe.md has no section §9',
      'b.ts:3: docs/recipe.md has no section §1.2',
      'b.ts:4: docs/recipe.md §3 does not contain "Decision"',
      'b.ts:5: docs/engines.md has no anchor #nowhere',
    ]);
  });
});

describe('findRecipeSectionProblems', () => {
  it('checks every § number, also in lists and ranges', () => {
    const repo = fakeRepo({ 'c.md': 'See §1, §2–§3 and §4.\nAlso §1.1 and §2.5.' });
    expect(messages(findRecipeSectionProblems(repo))).toEqual([
      'c.md:1: §4: docs/recipe.md has no heading numbered 4',
      'c.md:2: §2.5: docs/recipe.md has no heading numbered 2.5',
    ]);
  });
});

describe('findOutsideNoteProblems', () => {
  it('reports upper-case team notes and the shared folder, not in-repo ../shared paths', () => {
    const repo = fakeRepo(
      {
        'pkg/src/a.ts': [
          `// from ${'RECIPE'}.md and ${'TRAINER_API'}.md`,
          `// see ${'..'}/shared/docs`,
          "import { x } from '../shared.ts';",
          `// ${'/work'}/shared/seeds`,
        ].join('\n'),
        'pkg/src/sub/b.ts': `import { y } from '${'..'}/shared/y.ts';`,
      },
      ['pkg/src/shared/y.ts'],
    );
    expect(messages(findOutsideNoteProblems(repo))).toEqual([
      `pkg/src/a.ts:1: ${'RECIPE'}.md is not in the repository (cite docs/*.md instead)`,
      `pkg/src/a.ts:1: ${'TRAINER_API'}.md is not in the repository (cite docs/*.md instead)`,
      `pkg/src/a.ts:2: ${'..'}/shared is outside the repository`,
      `pkg/src/a.ts:4: ${'/work'}/shared is outside the repository`,
    ]);
  });
});

describe('findMarkdownLinkProblems', () => {
  it('resolves relative links, anchors and definitions; ignores URLs and code', () => {
    const repo = fakeRepo(
      {
        'docs/guide.md': [
          '# Guide',
          '## Local part',
          '[ok](engines.md) [ok](./engines.md#reduction) [ok](../pkg/) [ok](#local-part)',
          '[web](https://example.com/x.md) [mail](mailto:a@b.c) `[code](nope.md)`',
          '```',
          '[fenced](nope.md)',
          '```',
          '[bad](nope.md) [bad anchor](engines.md#nope) [self](#nope)',
          '[def]: ../missing/file.md',
          '[out](../../outside.md)',
        ].join('\n'),
        'notes.ts': '// [not markdown](nope.md)',
      },
      ['pkg/index.ts'],
    );
    expect(messages(findMarkdownLinkProblems(repo))).toEqual([
      'docs/guide.md:8: link nope.md: docs/nope.md does not exist',
      'docs/guide.md:8: link engines.md#nope: docs/engines.md has no #nope',
      'docs/guide.md:8: link #nope: no such anchor',
      'docs/guide.md:9: link ../missing/file.md: missing/file.md does not exist',
      'docs/guide.md:10: link ../../outside.md leaves the repository',
    ]);
  });
});

describe('findTrackerReferences', () => {
  it('reports issue, ticket and PR numbers, not ordinary numbers', () => {
    const repo = fakeRepo({
      'd.ts': [
        '// workaround for issue 4',
        '// fixes #12 (#13)',
        '// see PR 7 and Issues #8',
        '// 4 issues, step 4, colour #333, ratio 2',
        '// load_inplace since vllm-project/vllm PR #31326 (also vllm-project/vllm#31326)',
        '// (vLLM PR #31326; until SkyRL issue 12) but our PR 9 and the issue 3',
      ].join('\n'),
    });
    expect(messages(findTrackerReferences(repo))).toEqual([
      'd.ts:1: tracker reference "issue 4" (say what the code does instead)',
      'd.ts:2: tracker reference "fixes #12" (say what the code does instead)',
      'd.ts:2: tracker reference "(#13)" (say what the code does instead)',
      'd.ts:3: tracker reference "PR 7" (say what the code does instead)',
      'd.ts:3: tracker reference "Issues #8" (say what the code does instead)',
      'd.ts:6: tracker reference "PR 9" (say what the code does instead)',
      'd.ts:6: tracker reference "issue 3" (say what the code does instead)',
    ]);
  });
});

describe('markdown', () => {
  it('numbers headings, slugs them like GitHub and skips fenced code', () => {
    const doc = parseMarkdown(RECIPE_DOC + '\n' + ENGINES_DOC + '\n## Reduction');
    expect(doc.headings.map((h) => h.number ?? h.title)).toEqual([
      'Recipe',
      '1',
      '1.1',
      '2',
      '3',
      'Engines',
      'Reduction',
      'Tuning (why these numbers)',
      'Reduction',
    ]);
    expect(doc.anchors).toContain('reduction-1');
    expect(doc.anchors).toContain('custom-anchor');
    expect(githubSlug('`POST /v1/runs` (submitter)')).toBe('post-v1runs-submitter');
    expect(githubSlug('1.1 SFT warm-up')).toBe('11-sft-warm-up');
  });

  it('findBrokenReferences runs every finder', () => {
    const repo = fakeRepo({ 'e.md': `§9 ${'CONVENTIONS'}.md [x](gone.md) issue 3 docs/gone.md` });
    expect(findBrokenReferences(repo)).toHaveLength(5);
  });
});
