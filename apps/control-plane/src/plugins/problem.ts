// Every 4xx/5xx leaves as application/problem+json with a stable ANNEAL_ERR_* code.
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type {
  ConnectionError,
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
} from 'fastify';
import { type Issue, type ProblemDetails, problemType } from '@anneal/protocol';
import { NotReplicatedError } from '@anneal/store';
import { AnnealError } from '../errors.ts';

interface AjvError {
  instancePath: string;
  message?: string;
  keyword: string;
  params: Record<string, unknown>;
}

const CONTEXT_PREFIX: Record<string, string> = {
  body: '',
  querystring: '/query',
  params: '/params',
  headers: '/headers',
};

/** Fastify/ajv validation errors -> issues with JSON pointers (`/query/limit`, `/reason`). */
export function validationIssues(error: FastifyError): Issue[] {
  const prefix = CONTEXT_PREFIX[error.validationContext ?? 'body'] ?? '';
  const byPath = new Map<string, Issue>();
  for (const e of (error.validation ?? []) as AjvError[]) {
    const extra = e.params.additionalProperty ?? e.params.missingProperty;
    const path = prefix + e.instancePath + (extra === undefined ? '' : `/${String(extra)}`);
    const allowed = e.params.allowedValues as unknown[] | undefined;
    const message =
      e.keyword === 'additionalProperties'
        ? `unknown field '${String(extra)}'`
        : e.keyword === 'required'
          ? 'required field is missing'
          : e.keyword === 'enum' && allowed
            ? `expected one of ${allowed.join(', ')}`
            : (e.message ?? e.keyword);
    if (!byPath.has(path)) byPath.set(path, { path, message });
  }
  return [...byPath.values()];
}

const REDIS_DOWN = /Connection is closed|ECONNREFUSED|MaxRetriesPerRequest|Stream isn't writeable/;

/** Maps any thrown error to an AnnealError. */
export function toAnnealError(error: FastifyError | Error): AnnealError {
  if (error instanceof AnnealError) return error;
  if (error instanceof NotReplicatedError) {
    return new AnnealError(
      'ANNEAL_ERR_NOT_REPLICATED',
      `${error.message}; retry (with the same Idempotency-Key for a submission)`,
      undefined,
      { 'retry-after': '1' },
    );
  }
  const fe = error as FastifyError;
  if (fe.validation) {
    const issues = validationIssues(fe);
    return new AnnealError(
      'ANNEAL_ERR_VALIDATION',
      issues.map((i) => `${i.path}: ${i.message}`).join('; '),
      issues,
    );
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AnnealError('ANNEAL_ERR_PAYLOAD_TOO_LARGE', fe.message);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AnnealError('ANNEAL_ERR_UNSUPPORTED_MEDIA_TYPE', fe.message);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AnnealError('ANNEAL_ERR_VALIDATION', fe.message);
    case 'FST_ERR_BAD_URL':
      // A path with broken percent-encoding (`/v1/runs/%zz`): no route can match it.
      return new AnnealError('ANNEAL_ERR_VALIDATION', 'the path is not valid percent-encoding', [
        { path: '/params', message: 'expected percent-encoded UTF-8' },
      ]);
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new AnnealError(
        'ANNEAL_ERR_VALIDATION',
        `a path parameter is longer than ${MAX_PARAM_LENGTH} characters`,
        [{ path: '/params', message: `expected at most ${MAX_PARAM_LENGTH} characters` }],
      );
    case 'FST_STATIC_FORBIDDEN_PATH':
      // The docs UI's static files (@fastify/static): a path that climbs out of its root
      // (`%2e%2e%5c…`) or holds a NUL. No file by that name is served.
      return new AnnealError('ANNEAL_ERR_NOT_FOUND', 'no such static file');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      // Malformed JSON, or a `__proto__`/`constructor` key refused by Fastify's secure parser.
      return new AnnealError('ANNEAL_ERR_VALIDATION', `body is not valid JSON: ${fe.message}`);
  }
  if (fe.statusCode === 400 && error instanceof SyntaxError) {
    return new AnnealError('ANNEAL_ERR_VALIDATION', `body is not valid JSON: ${error.message}`);
  }
  if (REDIS_DOWN.test(error.message))
    return new AnnealError('ANNEAL_ERR_UNAVAILABLE', 'Redis is unavailable');
  return new AnnealError('ANNEAL_ERR_INTERNAL');
}

function problemBody(error: AnnealError, instance?: string): ProblemDetails {
  return {
    type: problemType(error.code),
    title: error.title,
    status: error.statusCode,
    code: error.code,
    ...(error.detail !== undefined && { detail: error.detail }),
    ...(instance !== undefined && { instance }),
    ...(error.errors !== undefined && error.errors.length > 0 && { errors: [...error.errors] }),
  };
}

export function sendProblem(request: FastifyRequest, reply: FastifyReply, error: AnnealError) {
  const body = problemBody(error, request.url.split('?')[0] ?? request.url);
  // Refused before its body was read (no or a bad token, rate-limited, too large): the connection
  // closes after the answer, instead of staying open while Node discards what the client still
  // trickles in. An unauthenticated client gets no kept-alive connection at all.
  const close = !request.raw.complete || error.code === 'ANNEAL_ERR_UNAUTHENTICATED';
  return reply
    .code(error.statusCode)
    .headers(error.headers ?? {})
    .headers(close ? { connection: 'close' } : {})
    .type('application/problem+json')
    .serializer(JSON.stringify)
    .send(body);
}

/**
 * Longest path parameter the router accepts (Fastify's `maxParamLength`, default 100): above
 * every id the API takes (worker ids are up to 128 characters, WORKER_ID_PATTERN).
 */
export const MAX_PARAM_LENGTH = 256;

/**
 * Fastify's `frameworkErrors` option: the router's own refusals (bad percent-encoding, an
 * over-long path parameter) happen before any route or error handler, and would otherwise be
 * answered with Fastify's plain JSON instead of problem+json.
 */
export function frameworkErrors(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  void sendProblem(request, reply, toAnnealError(error));
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP parser refuses (a bad header character,
 * conflicting Content-Length and Transfer-Encoding, headers over the size limit, a request not
 * received in time) never becomes a request, so no handler above sees it; this answers it on the
 * socket as problem+json too (Fastify's default writes its own JSON), then closes the connection.
 */
export function clientErrorHandler(error: ConnectionError, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const problem =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new AnnealError('ANNEAL_ERR_REQUEST_TIMEOUT', 'the request was not received in time')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? new AnnealError('ANNEAL_ERR_HEADERS_TOO_LARGE', 'the request headers are too large')
        : new AnnealError(
            'ANNEAL_ERR_VALIDATION',
            `malformed HTTP request (${error.code ?? 'parse error'})`,
          );
  if (socket.writable) {
    const body = JSON.stringify(problemBody(problem));
    const status = problem.statusCode;
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/problem+json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/** Installs the error and not-found handlers on the root instance. */
export function installProblemHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const annealError = toAnnealError(error);
    if (annealError.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    return sendProblem(request, reply, annealError);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      request,
      reply,
      new AnnealError(
        'ANNEAL_ERR_NOT_FOUND',
        `no route ${request.method} ${request.url.split('?')[0]}`,
      ),
    ),
  );
}
