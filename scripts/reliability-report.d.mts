// Types of scripts/reliability-report.mjs for the TypeScript tests that write and check results.
export interface ReliabilityRow {
  scenario: string;
  variant: string;
  lost: number;
  duplicated: number;
  detectMs: number | null;
  recoverMs: number | null;
  detail: string;
  measuredAt: string;
}
export interface Column {
  field: keyof ReliabilityRow;
  header: string;
  type: 'string' | 'count' | 'ms';
}
export const RESULTS_DIR: string;
export const DOC: string;
export const BEGIN: string;
export const END: string;
export const COLUMNS: readonly Column[];
export function checkRow(row: unknown, source?: string): ReliabilityRow;
export function renderTable(rows: readonly ReliabilityRow[]): string;
export function tableHeader(doc: string): string[];
export function readResults(dir?: string): Promise<ReliabilityRow[]>;
