// The `search_web` tool: validates a query against the limits (docs/recipe.md §6), calls the backend,
// renders the results. One `ToolSession` per rollout counts c_i (calls) and e_i (failed calls).
import { resolveLimits, resolveRender } from './limits.ts';
import type { RenderBudget, SearchLimits } from './limits.ts';
import { renderResults } from './render.ts';
import { SearchBackendError } from './types.ts';
import type { SearchBackend } from './types.ts';

export type ToolCallStatus =
  'ok' | 'empty_query' | 'query_too_long' | 'refused' | 'backend_error' | 'malformed';

/** Whether a call was sent to the search backend (a backend error was sent and failed there);
 * the others the tool answered itself: refused past the cap, empty or over-long query,
 * malformed. Evaluation bills only the sent ones (docs/evaluation.md). */
export function reachedBackend(status: ToolCallStatus): boolean {
  return status === 'ok' || status === 'backend_error';
}

export interface ToolCallRecord {
  query: string;
  status: ToolCallStatus;
  /** Whether the call counts in e_i. */
  failed: boolean;
  resultCount: number;
  /** Text appended to the sequence between the result markers. */
  output: string;
  error?: string;
}

export interface ToolSession {
  /** Run one call; never throws for tool-level failures (they are recorded and counted). */
  call(query: string, signal?: AbortSignal): Promise<ToolCallRecord>;
  /** Record a call the model emitted without a parsable query (broken tool call). */
  malformed(detail: string): ToolCallRecord;
  readonly records: readonly ToolCallRecord[];
  /** c_i: all calls the model emitted, including failed and refused ones. */
  readonly calls: number;
  /** e_i: failed calls (invalid, backend errors, and refused when configured). */
  readonly errors: number;
  readonly refused: number;
}

export interface SearchWebOptions {
  limits?: Partial<SearchLimits>;
  render?: Partial<RenderBudget>;
}

export class SearchWebTool {
  readonly name = 'search_web';
  readonly limits: Readonly<SearchLimits>;
  readonly render: Readonly<RenderBudget>;

  constructor(
    readonly backend: SearchBackend,
    options: SearchWebOptions = {},
  ) {
    this.limits = resolveLimits(options.limits);
    this.render = resolveRender(options.render, this.limits);
  }

  session(): ToolSession {
    return new SearchSession(this);
  }
}

class SearchSession implements ToolSession {
  readonly records: ToolCallRecord[] = [];

  constructor(private readonly tool: SearchWebTool) {}

  get calls(): number {
    return this.records.length;
  }
  get errors(): number {
    return this.records.filter((r) => r.failed).length;
  }
  get refused(): number {
    return this.records.filter((r) => r.status === 'refused').length;
  }

  /** Every emitted call takes a slot of the budget, whatever its outcome; refused ones do not. */
  private get overBudget(): boolean {
    return this.calls - this.refused >= this.tool.limits.maxCallsPerRollout;
  }

  private fail(query: string, status: ToolCallStatus, message: string, detail = message) {
    const refusedNotFailed = status === 'refused' && !this.tool.limits.refusedCountsAsFailed;
    const rec: ToolCallRecord = {
      query,
      status,
      failed: !refusedNotFailed,
      resultCount: 0,
      output: `error: ${message}`,
      error: detail,
    };
    this.records.push(rec);
    return rec;
  }

  private refuse(query: string): ToolCallRecord {
    return this.fail(
      query,
      'refused',
      `call limit reached (${this.tool.limits.maxCallsPerRollout})`,
    );
  }

  malformed(detail: string): ToolCallRecord {
    if (this.overBudget) return this.refuse('');
    return this.fail('', 'malformed', `malformed call: ${detail}`);
  }

  async call(rawQuery: string, signal?: AbortSignal): Promise<ToolCallRecord> {
    const { limits, render, backend } = this.tool;
    const query = rawQuery.trim();
    if (this.overBudget) return this.refuse(query);
    if (query.length === 0) return this.fail(query, 'empty_query', 'empty query');
    const chars = [...query].length;
    if (chars > limits.maxQueryLength) {
      return this.fail(
        query,
        'query_too_long',
        `query has ${chars} characters, limit ${limits.maxQueryLength}`,
      );
    }
    try {
      const results = await backend.search(query, limits.resultsPerCall, signal);
      const rec: ToolCallRecord = {
        query,
        status: 'ok',
        failed: false,
        resultCount: results.length,
        output: renderResults(results, render),
      };
      this.records.push(rec);
      return rec;
    } catch (err) {
      if (!(err instanceof SearchBackendError) || err.code === 'aborted') throw err;
      return this.fail(query, 'backend_error', `search failed (${err.code})`, err.message);
    }
  }
}
