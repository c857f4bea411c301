// Request ids: a client's `X-Request-ID` is kept when it looks like an id (so a request can be
// followed from a proxy or client into these logs), otherwise a fresh UUID is used. The id is on
// every log line of the request: an unchecked header would let any client write kilobytes of its
// choosing into each line, or pass itself off as another request.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Fastify's `genReqId` (with `requestIdHeader: false`, it sees every request). */
export function requestIdOf(request: IncomingMessage): string {
  const header = request.headers['x-request-id'];
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID();
}
