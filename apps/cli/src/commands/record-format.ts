// Shared by the commands that print a run's records (rollouts, eval items): clipped text, fixed
// digits, and the `--sort -key` flag.

import { terminalSafe } from '../ops/terminal-text.ts';

/** Longest text shown of a prompt, a turn, an answer (the JSON has all of it). */
const CLIP = 240;

/** `text` on one line, printable, at most `max` characters (… marks a cut). */
export function clip(text: string, max = CLIP): string {
  const flat = terminalSafe(text.replace(/\s+/g, ' ').trim());
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

export const num = (v: number | null | undefined, digits = 3): string =>
  v === null || v === undefined ? '-' : v.toFixed(digits);

export const signed = (v: number | null, digits = 3): string =>
  v === null ? '-' : `${v >= 0 ? '+' : ''}${v.toFixed(digits)}`;

/** `--sort -reward` → sort=reward, order=desc; `--sort length` → ascending. */
export function parseSortFlag(flag: string): { sort: string; order: 'asc' | 'desc' } {
  return flag.startsWith('-')
    ? { sort: flag.slice(1), order: 'desc' }
    : { sort: flag.replace(/^\+/, ''), order: 'asc' };
}

/** Sets sort and order on `query` from a `--sort` flag. */
export function setSort(query: URLSearchParams, flag: string | undefined): void {
  if (flag === undefined) return;
  const { sort, order } = parseSortFlag(flag);
  query.set('sort', sort);
  query.set('order', order);
}
