// Futures of the embedded trainer server (docs/engines.md): every async POST answers
// `{request_id, status: "pending"}` at once; `retrieve_future` gives the result (200), 408 while
// pending, 400 `{detail}` when it failed, 404 when unknown. `(model_id, seq_id)` makes a POST
// idempotent: a retry with the same payload gets the original request id; another payload, 409.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type * as Wire from '../tinker/wire.ts';
import { ValidationError } from './server-wire.ts';

/** An error answered as `{detail}` with this HTTP status. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    detail: string,
  ) {
    super(detail);
  }
}

type Future =
  | { state: 'pending'; at: number }
  | { state: 'done'; at: number; result: unknown }
  | { state: 'failed'; at: number; error: string };

export class FutureStore {
  private readonly futures = new Map<string, Future>();
  private readonly sequenced = new Map<string, { requestId: string; fingerprint: string }>();

  /** `fingerprint` identifies the payload (route + body) for the seq_id check. */
  start(
    modelId: string,
    seqId: number | undefined,
    fingerprint: string,
    op: () => Promise<unknown>,
  ): Wire.UntypedFuture {
    const key = seqId === undefined ? undefined : `${modelId}#${seqId}`;
    const previous = key === undefined ? undefined : this.sequenced.get(key);
    if (previous) {
      if (previous.fingerprint !== fingerprint) {
        throw new HttpError(
          409,
          `seq_id ${seqId} of model ${modelId} was already used with a different request`,
        );
      }
      return { request_id: previous.requestId, status: 'pending', model_id: modelId };
    }
    const requestId = `r-${randomUUID()}`;
    if (key !== undefined) this.sequenced.set(key, { requestId, fingerprint });
    this.futures.set(requestId, { state: 'pending', at: Date.now() });
    op().then(
      (result) => this.futures.set(requestId, { state: 'done', at: Date.now(), result }),
      (err: Error) =>
        this.futures.set(requestId, { state: 'failed', at: Date.now(), error: err.message }),
    );
    return { request_id: requestId, status: 'pending', model_id: modelId };
  }

  /** A future that is already done (e.g. create_model's request_id). */
  settled(result: unknown): string {
    const requestId = `r-${randomUUID()}`;
    this.futures.set(requestId, { state: 'done', at: Date.now(), result });
    return requestId;
  }

  retrieve(requestId: string): unknown {
    const future = this.futures.get(requestId);
    if (!future) throw new HttpError(404, `unknown request_id ${requestId}`);
    if (future.state === 'pending')
      throw new HttpError(408, `request ${requestId} is still pending`);
    if (future.state === 'failed') throw new HttpError(400, future.error);
    return future.result;
  }

  /** Forgets finished futures older than retentionMs, with their seq_id entries. */
  sweep(retentionMs: number, now = Date.now()): void {
    for (const [id, future] of this.futures) {
      if (future.state !== 'pending' && now - future.at > retentionMs) this.futures.delete(id);
    }
    for (const [key, entry] of this.sequenced) {
      if (!this.futures.has(entry.requestId)) this.sequenced.delete(key);
    }
  }
}

/** The request body as JSON: 413 above `limit` bytes, 422 (`json_invalid`) when unparsable. */
export function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new HttpError(413, `request body exceeds ${limit} bytes`));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(
          new ValidationError([{ loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' }]),
        );
      }
    });
  });
}
