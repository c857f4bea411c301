// What a workspace ships: the sources its tsconfig.build.json compiles (src/ only; tests, test
// doubles and fixtures live in test/ or are *.test.ts) and the files under its dist/. The images
// copy dist/ of each workspace and nothing else (infra/docker/*.Dockerfile).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Workspaces that build to dist/ (they have a tsconfig.build.json). */
export function builtWorkspaces(root: string): string[] {
  return ['apps', 'packages']
    .flatMap((group) =>
      readdirSync(path.join(root, group)).map((name) => path.join(root, group, name)),
    )
    .filter((dir) => existsSync(path.join(dir, 'tsconfig.build.json')));
}

/** The root source files tsc -b compiles for `workspace`, as the compiler reads its config. */
export function buildSources(workspace: string): string[] {
  const configPath = path.join(workspace, 'tsconfig.build.json');
  const parsed = ts.getParsedCommandLineOfConfigFile(configPath, undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  });
  if (parsed === undefined) throw new Error(`${configPath}: cannot be read`);
  return parsed.fileNames;
}

/** Every file under dir, recursively (empty when dir does not exist). */
export function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/** Why `file` (a source or a dist/ file of a workspace) is test code, or undefined. */
export function testCodeReason(workspace: string, file: string): string | undefined {
  const rel = path.relative(workspace, file).split(path.sep).join('/');
  if (/\.test\.(ts|js|d\.ts|js\.map|d\.ts\.map)$/.test(rel)) return 'a test file';
  if (/(^|\/)(test|testing|testdata)\//.test(rel)) return 'under a test directory';
  if (/(^|\/)[^/]*(fake|fixture)[^/]*$/i.test(rel)) return 'a fake or fixture by its name';
  if (rel.endsWith('.js') && importsTestingModule(readFileSync(file, 'utf8'))) {
    return 'imports a testing module';
  }
  return undefined;
}

/** A module specifier ending in `/testing` (`@anneal/engines/testing`, `@anneal/testing`) in an
 * import, export-from, dynamic import or require; not the same string as data (a bundled
 * package.json lists `"@anneal/testing": "*"` among its devDependencies). */
export function importsTestingModule(source: string): boolean {
  return /(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"][^'"]*\/testing['"]/.test(source);
}
