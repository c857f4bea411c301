// Coded errors: every error the API returns is an AnnealError with an ANNEAL_ERR_* code from
// the protocol catalogue (status and title come from there; docs/api.md documents each).
import { ERROR_CODES, type ErrorCode, type Issue } from '@anneal/protocol';

export class AnnealError extends Error {
  readonly statusCode: number;
  readonly title: string;

  constructor(
    readonly code: ErrorCode,
    readonly detail?: string,
    readonly errors?: readonly Issue[],
    readonly headers?: Record<string, string>,
  ) {
    super(detail ?? ERROR_CODES[code].title);
    this.name = 'AnnealError';
    this.statusCode = ERROR_CODES[code].status;
    this.title = ERROR_CODES[code].title;
  }
}

export const runNotFound = (id: string) =>
  new AnnealError('ANNEAL_ERR_RUN_NOT_FOUND', `no run '${id}' in this tenant`);

export const workerNotFound = (id: string) =>
  new AnnealError('ANNEAL_ERR_WORKER_NOT_FOUND', `no live worker '${id}'`);
