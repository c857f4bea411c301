// eval-items.jsonl, the per-item answers of an eval run (docs/evaluation.md "Tracing a number to
// answers"), capped at MAX_ITEM_RECORDS lines. Lines of a cell are appended before its step is
// committed, so on a resumed attempt the file holds the lines of every committed cell and maybe
// those of the cell the killed attempt was in: opening it keeps the committed cells' lines only
// (the partial cell is answered again), so no item is listed twice.
import { appendFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { EvalItem, parseStoredLine } from '@anneal/protocol';
import { EVAL_ITEMS_FILE } from '@anneal/store/files';

/** Item records kept per run (one line each); beyond it the numbers stay, the lines stop. */
export const MAX_ITEM_RECORDS = 50_000;
/** The control plane serves the file by the same name (GET /v1/runs/{id}/items). */
export const ITEMS_FILE = EVAL_ITEMS_FILE;

async function readLines(file: string): Promise<string[]> {
  try {
    return (await readFile(file, 'utf8')).split('\n');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

export class ItemLog {
  private constructor(
    private readonly file: string,
    private written: number,
  ) {}

  /** Opens the file for an attempt: only the lines of `committed` steps are kept (none on a
   * fresh run), and returned. */
  static async open(
    file: string,
    committed: ReadonlySet<number>,
  ): Promise<{ log: ItemLog; kept: EvalItem[] }> {
    await mkdir(path.dirname(file), { recursive: true });
    const kept =
      committed.size === 0
        ? []
        : (await readLines(file))
            // undefined: an empty line, or one cut short by a killed worker
            .map((line, n) =>
              line.length === 0
                ? undefined
                : parseStoredLine(EvalItem, line, () => `${file} line ${n + 1}`),
            )
            .filter((x): x is EvalItem => x !== undefined && committed.has(x.step));
    // Written aside and renamed: a worker killed meanwhile leaves the old file whole.
    const next = `${file}.${process.pid}.tmp`;
    await writeFile(next, kept.map((x) => JSON.stringify(x) + '\n').join(''));
    await rename(next, file);
    return { log: new ItemLog(file, kept.length), kept };
  }

  async append(items: readonly EvalItem[]): Promise<void> {
    const kept = items.slice(0, Math.max(0, MAX_ITEM_RECORDS - this.written));
    if (kept.length === 0) return;
    await appendFile(this.file, kept.map((x) => JSON.stringify(x) + '\n').join(''));
    this.written += kept.length;
  }
}
