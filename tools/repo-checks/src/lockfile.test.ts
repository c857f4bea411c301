// package-lock.json installs registry packages only, each pinned by sha512 (lockfile.ts).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatLockProblem, lockfileProblems } from './lockfile.ts';
import { REPO_ROOT } from './repo.ts';

const SHA = `sha512-${'A'.repeat(86)}==`;

describe('package-lock.json', () => {
  it('installs only registry packages at exact versions pinned by sha512', () => {
    const lock: unknown = JSON.parse(
      readFileSync(path.join(REPO_ROOT, 'package-lock.json'), 'utf8'),
    );
    expect(lockfileProblems(lock).map(formatLockProblem)).toEqual([]);
  });
});

describe('lockfileProblems', () => {
  it('names each entry from git, a tarball URL or a file, or without a sha512 hash', () => {
    const lock = {
      lockfileVersion: 3,
      packages: {
        '': { name: 'root' },
        'apps/x': { name: 'x' },
        'node_modules/ok': { version: '1.2.3', integrity: SHA },
        'node_modules/ok-resolved': {
          version: '1.0.0-rc.1',
          resolved: 'https://registry.npmjs.org/ok-resolved/-/ok-resolved-1.0.0-rc.1.tgz',
          integrity: SHA,
        },
        'node_modules/x': { link: true, resolved: 'apps/x' },
        'node_modules/from-git': {
          version: 'git+ssh://git@github.com/evil/pkg.git#abc',
          resolved: 'git+ssh://git@github.com/evil/pkg.git#abc',
          integrity: SHA,
        },
        'node_modules/from-url': {
          version: '1.0.0',
          resolved: 'https://evil.example/pkg-1.0.0.tgz',
          integrity: SHA,
        },
        'node_modules/sha1-only': { version: '1.0.0', integrity: 'sha1-abcdef=' },
        'node_modules/no-hash': { version: '1.0.0' },
        'node_modules/escapes': { link: true, resolved: '../elsewhere' },
        'node_modules/nowhere': { link: true, resolved: 'apps/missing' },
      },
    };
    expect(lockfileProblems(lock).map((p) => p.path)).toEqual([
      'node_modules/from-git', // its version is a git spec, and so is its source
      'node_modules/from-git',
      'node_modules/from-url',
      'node_modules/sha1-only',
      'node_modules/no-hash',
      'node_modules/escapes',
      'node_modules/nowhere',
    ]);
  });

  it('refuses a lockfile of another version', () => {
    expect(lockfileProblems({ lockfileVersion: 1, dependencies: {} })).toHaveLength(1);
  });
});
