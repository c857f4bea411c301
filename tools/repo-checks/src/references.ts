// Finds references that point at nothing: a cited docs file or section that does not exist, a
// recipe section number with no heading, a Markdown link to a missing file or anchor, a name of a
// document kept outside the repository, a tracker number. Each finder is pure over a `Repo` view,
// so the tests can feed it a small synthetic tree; repo.ts builds the view of the real one.
import path from 'node:path';
import {
  numberedHeading,
  parseMarkdown,
  plainText,
  sectionText,
  titledHeading,
} from './markdown.ts';
import type { MarkdownDoc } from './markdown.ts';

export interface SourceFile {
  /** Repository-relative POSIX path. */
  path: string;
  text: string;
}

export interface Repo {
  /** The files whose references are checked. */
  files: readonly SourceFile[];
  /** Text of a repository file, or undefined when there is none. */
  read(repoPath: string): string | undefined;
  /** Whether a repository path (file or directory) exists. */
  exists(repoPath: string): boolean;
}

export interface Problem {
  file: string;
  /** 1-based. */
  line: number;
  message: string;
}

export function formatProblem(p: Problem): string {
  return `${p.file}:${p.line}: ${p.message}`;
}

/** The numbered recipe every `§N` in the repository refers to. */
export const RECIPE = 'docs/recipe.md';

// `docs/<name>.md`, optionally `#anchor`, then optionally `§N[.M]` and/or a quoted section name,
// e.g. docs/engines.md "Reduction", `docs/operations.md` "The operator CLI",
// docs/recipe.md §4 "Decision", docs/demo.md ("Tuning"). Paths like ../../docs/x.md are links
// relative to their file and are checked as such, not here. A quoted name starts with a letter,
// so the closing quote of a string literal ("docs/api.md", "…") is not taken for one.
const DOC_CITATION =
  /(?<![\w./-])docs\/([a-z0-9][a-z0-9-]*)\.md(?:#([\w-]+))?`?(?:[ \t]*\(?§[ \t]?(\d+(?:\.\d+)*))?(?:[ \t]*\(?"([A-Za-z][^"\n]*)")?/g;
const SECTION_SIGN = /§[ \t]?(\d+(?:\.\d+)*)/g;
// Team notes that live outside the repository; spelled in parts so this file does not cite them.
const OUTSIDE_NOTES = [
  'RECIPE',
  'TRAINER_API',
  'VLLM_API',
  'ARCHITECTURE',
  'CONVENTIONS',
  'DEVELOPERS',
];
const OUTSIDE_NOTE = new RegExp(`\\b(?:${OUTSIDE_NOTES.join('|')})\\.md\\b`, 'g');
const SHARED_DIR = /(?<![\w.])((?:\.\.\/)+shared)(?![\w-]|\.\w)/g;
const ABSOLUTE_SHARED = /\/work\/shared\b/g;
const TRACKER =
  /\b(?:issues?|tickets?)[ \t]?#?\d+\b|\bPRs?[ \t]?#?\d+\b|\b(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?|see|refs?)[ \t]+#\d+\b|\(#\d+\)/gi;
// An upstream project right before a tracker number (`vLLM PR #1`, `vllm-project/vllm#1`): that
// cites where an engine's behaviour comes from, not a tracker of this repository.
const UPSTREAM_PROJECTS = [
  'vLLM',
  'SkyRL',
  'Tinker',
  'BullMQ',
  'Fastify',
  'ioredis',
  'onnxruntime',
  'prom-client',
  'TypeBox',
  'vitest',
  'Node.js',
  'TypeScript',
];
const UPSTREAM_BEFORE = new RegExp(
  `(?:[\\w.-]+\\/[\\w.-]+|\\b(?:${UPSTREAM_PROJECTS.map((p) => p.replace('.', '\\.')).join('|')}))[ \\t]*$`,
  'i',
);
const INLINE_LINK = /!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
const LINK_DEFINITION = /^\s{0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/;
const URL_SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/** Runs every finder over the repository. */
export function findBrokenReferences(repo: Repo): Problem[] {
  return [
    ...findDocCitationProblems(repo),
    ...findRecipeSectionProblems(repo),
    ...findOutsideNoteProblems(repo),
    ...findMarkdownLinkProblems(repo),
    ...findTrackerReferences(repo),
  ];
}

/** Parsed Markdown files of one repository, read once each. */
function docCache(repo: Repo): (repoPath: string) => MarkdownDoc | undefined {
  const cache = new Map<string, MarkdownDoc | undefined>();
  return (repoPath) => {
    if (!cache.has(repoPath)) {
      const text = repo.read(repoPath);
      cache.set(repoPath, text === undefined ? undefined : parseMarkdown(text));
    }
    return cache.get(repoPath);
  };
}

function forEachMatch(
  file: SourceFile,
  pattern: RegExp,
  visit: (match: RegExpMatchArray, line: number) => string | undefined,
): Problem[] {
  const problems: Problem[] = [];
  file.text.split('\n').forEach((text, index) => {
    for (const match of text.matchAll(pattern)) {
      const message = visit(match, index + 1);
      if (message) problems.push({ file: file.path, line: index + 1, message });
    }
  });
  return problems;
}

/** `docs/<name>.md` exists; its cited `#anchor`, `§N`, quoted section or quoted phrase too. */
export function findDocCitationProblems(repo: Repo): Problem[] {
  const docs = docCache(repo);
  return repo.files.flatMap((file) =>
    forEachMatch(file, DOC_CITATION, (match) => {
      const [, name, anchor, number, quote] = match;
      const target = `docs/${name}.md`;
      const doc = docs(target);
      if (!doc) return `${target} does not exist`;
      if (anchor !== undefined && !doc.anchors.has(anchor)) {
        return `${target} has no anchor #${anchor}`;
      }
      if (number !== undefined) {
        const heading = numberedHeading(doc, number);
        if (!heading) return `${target} has no section §${number}`;
        // With a number, the quote names a passage of that section ("Decision", "Prompt mix").
        if (quote !== undefined && !containsPhrase(sectionText(doc, heading), quote)) {
          return `${target} §${number} does not contain "${quote}"`;
        }
        return undefined;
      }
      if (quote !== undefined && !titledHeading(doc, quote)) {
        return `${target} has no section "${quote}"`;
      }
      return undefined;
    }),
  );
}

function containsPhrase(text: string, phrase: string): boolean {
  return plainText(text).toLowerCase().includes(plainText(phrase).toLowerCase());
}

/** Every `§N[.M]` anywhere names a numbered heading of the recipe (the only numbered doc). */
export function findRecipeSectionProblems(repo: Repo): Problem[] {
  const recipe = docCache(repo)(RECIPE);
  return repo.files.flatMap((file) =>
    forEachMatch(file, SECTION_SIGN, (match) => {
      const number = match[1]!;
      if (!recipe) return `§${number} cites ${RECIPE}, which does not exist`;
      return numberedHeading(recipe, number)
        ? undefined
        : `§${number}: ${RECIPE} has no heading numbered ${number}`;
    }),
  );
}

/** No reference to notes kept outside the repository: the code must stand on its own docs. */
export function findOutsideNoteProblems(repo: Repo): Problem[] {
  return repo.files.flatMap((file) => [
    ...forEachMatch(
      file,
      OUTSIDE_NOTE,
      (match) => `${match[0]} is not in the repository (cite docs/*.md instead)`,
    ),
    ...forEachMatch(file, SHARED_DIR, (match) =>
      repo.exists(path.posix.join(path.posix.dirname(file.path), match[1]!))
        ? undefined
        : `${match[1]} is outside the repository`,
    ),
    ...forEachMatch(file, ABSOLUTE_SHARED, (match) => `${match[0]} is outside the repository`),
  ]);
}

/** Relative links and link definitions in Markdown files resolve to a file, and to its anchor. */
export function findMarkdownLinkProblems(repo: Repo): Problem[] {
  const docs = docCache(repo);
  return repo.files
    .filter((file) => file.path.endsWith('.md'))
    .flatMap((file) => {
      const doc = docs(file.path) ?? parseMarkdown(file.text);
      const problems: Problem[] = [];
      const check = (target: string, line: number) => {
        const message = linkProblem(repo, docs, file.path, doc, target);
        if (message) problems.push({ file: file.path, line, message });
      };
      proseLines(file.text).forEach((text, index) => {
        for (const match of text.matchAll(INLINE_LINK)) check(match[1]!, index + 1);
        const definition = LINK_DEFINITION.exec(text);
        if (definition) check(definition[1]!, index + 1);
      });
      return problems;
    });
}

/** Lines with fenced code emptied and inline code spans blanked (links there are not links). */
function proseLines(text: string): string[] {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line.replace(/`[^`]*`/g, (span) => ' '.repeat(span.length));
  });
}

function linkProblem(
  repo: Repo,
  docs: (repoPath: string) => MarkdownDoc | undefined,
  fromPath: string,
  fromDoc: MarkdownDoc,
  target: string,
): string | undefined {
  if (URL_SCHEME.test(target) || target.startsWith('//')) return undefined;
  const [rawPath = '', anchor] = target.split('#', 2);
  if (rawPath === '') {
    return anchor && !fromDoc.anchors.has(anchor) ? `link #${anchor}: no such anchor` : undefined;
  }
  const resolved = rawPath.startsWith('/')
    ? path.posix.normalize(rawPath.slice(1))
    : path.posix.join(path.posix.dirname(fromPath), decodeURI(rawPath));
  if (resolved.startsWith('..')) return `link ${target} leaves the repository`;
  if (!repo.exists(resolved)) return `link ${target}: ${resolved} does not exist`;
  if (anchor && resolved.endsWith('.md')) {
    const doc = docs(resolved);
    if (doc && !doc.anchors.has(anchor)) return `link ${target}: ${resolved} has no #${anchor}`;
  }
  return undefined;
}

/** The code says what is; tracker numbers ("issue N", "fixes #N") rot and point outside. A
 * number qualified by its upstream project (`vLLM PR #N`, `owner/repo#N`) is allowed. */
export function findTrackerReferences(repo: Repo): Problem[] {
  return repo.files.flatMap((file) =>
    forEachMatch(file, TRACKER, (match) => {
      const before = (match.input ?? '').slice(0, match.index);
      if (UPSTREAM_BEFORE.test(before)) return undefined;
      return `tracker reference "${match[0]}" (say what the code does instead)`;
    }),
  );
}
