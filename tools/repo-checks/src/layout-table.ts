// A README's layout table checked against the tree, so it cannot drift from the code: in a
// `| \`folder/\` | concern | \`a.ts\`, \`b.ts\` |` table under the README's `## Layout` heading,
// every source file of a listed folder (its own `.ts` files, tests aside) is named in the folder's
// row, every named file exists, and every folder under the README's roots that holds a source
// file has a row. Pure over a list of paths; `layout-table.test.ts` runs it on the repository.

export interface LayoutRow {
  /** Folder relative to the README's directory, with a trailing `/`. */
  folder: string;
  files: string[];
  /** 1-based line in the README. */
  line: number;
}

export interface LayoutProblem {
  line: number;
  message: string;
}

const ROW = /^\|\s*`([^`]+\/)`\s*\|(.*)\|\s*([^|]*)\|\s*$/;

/** The rows of the table under `## <heading>`; a README without that heading is an error. */
export function layoutRows(markdown: string, heading = 'Layout'): LayoutRow[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => l.trim() === `## ${heading}`);
  if (start < 0) throw new Error(`layout table: no "## ${heading}" heading`);
  const rows: LayoutRow[] = [];
  for (let i = start + 1; i < lines.length && !lines[i]!.startsWith('## '); i++) {
    const match = ROW.exec(lines[i]!.trim());
    if (match === null) continue;
    const [, folder, , files] = match;
    rows.push({
      folder: folder!,
      files: [...files!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!),
      line: i + 1,
    });
  }
  if (rows.length === 0) throw new Error(`layout table: no folder rows under "## ${heading}"`);
  return rows;
}

/** A file the table must name: TypeScript source, not a test or a declaration file. */
export function isLayoutSource(file: string): boolean {
  return file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.endsWith('.d.ts');
}

const folderOf = (file: string) => file.slice(0, file.lastIndexOf('/') + 1);

/**
 * Differences between the table and `files` (paths relative to the README's directory).
 * `roots` are the folders (with trailing `/`) whose every source folder must have a row.
 */
export function layoutProblems(
  rows: readonly LayoutRow[],
  files: readonly string[],
  roots: readonly string[],
): LayoutProblem[] {
  const problems: LayoutProblem[] = [];
  const sources = files.filter(isLayoutSource);
  const byFolder = new Map<string, Set<string>>();
  for (const file of sources) {
    const folder = folderOf(file);
    const names = byFolder.get(folder) ?? new Set<string>();
    names.add(file.slice(folder.length));
    byFolder.set(folder, names);
  }
  const seen = new Set<string>();
  for (const row of rows) {
    if (seen.has(row.folder)) {
      problems.push({ line: row.line, message: `\`${row.folder}\` has a second row` });
    }
    seen.add(row.folder);
    const present = byFolder.get(row.folder) ?? new Set<string>();
    for (const name of row.files) {
      if (!present.has(name)) {
        problems.push({
          line: row.line,
          message: `\`${row.folder}${name}\` is listed but is not a source file of the tree`,
        });
      }
    }
    const listed = new Set(row.files);
    for (const name of [...present].sort()) {
      if (!listed.has(name)) {
        problems.push({
          line: row.line,
          message: `\`${row.folder}${name}\` is missing from the \`${row.folder}\` row`,
        });
      }
    }
  }
  for (const folder of [...byFolder.keys()].sort()) {
    if (seen.has(folder) || !roots.some((root) => folder.startsWith(root))) continue;
    problems.push({
      line: 0,
      message: `\`${folder}\` holds ${[...byFolder.get(folder)!].sort().join(', ')} but has no row`,
    });
  }
  return problems;
}
