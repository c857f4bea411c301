// The real repository as a `Repo`: the text files git knows about (tracked, plus new files not
// ignored, so a reference is checked before its first commit), read from the working tree.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Repo, SourceFile } from './references.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

const SCANNED_EXTENSIONS = new Set([
  '.ts',
  '.mts',
  '.cts',
  '.js',
  '.mjs',
  '.cjs',
  '.md',
  '.yml',
  '.yaml',
  '.json',
  '.wat',
]);
/** Generated from the registry; it names packages, not documents. */
const NOT_SCANNED = new Set(['package-lock.json']);

export function isScanned(repoPath: string): boolean {
  const base = path.posix.basename(repoPath);
  if (NOT_SCANNED.has(base)) return false;
  return SCANNED_EXTENSIONS.has(path.posix.extname(base)) || base.includes('Dockerfile');
}

/** Repository-relative paths of the files git tracks or would track, that exist on disk. */
export function gitFiles(root: string): string[] {
  let out: string;
  try {
    out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    throw new Error(`repo-checks: cannot list files with git in ${root}: ${String(err)}`, {
      cause: err,
    });
  }
  const files = out.split('\0').filter((p) => p !== '');
  return [...new Set(files)].filter((p) => existsSync(path.join(root, p))).sort();
}

/** The repository at `root`; `exclude` lists files whose references are not checked. */
export function diskRepo(root: string, exclude: ReadonlySet<string> = new Set()): Repo {
  const files: SourceFile[] = gitFiles(root)
    .filter((p) => isScanned(p) && !exclude.has(p) && statSync(path.join(root, p)).isFile())
    .map((p) => ({ path: p, text: readFileSync(path.join(root, p), 'utf8') }));
  return {
    files,
    read: (repoPath) => {
      const full = path.join(root, repoPath);
      return existsSync(full) && statSync(full).isFile() ? readFileSync(full, 'utf8') : undefined;
    },
    exists: (repoPath) => existsSync(path.join(root, repoPath)),
  };
}
