// What a request line logs: method, path and a redacted query string, never headers. A client
// may put a credential anywhere in the query (`?token=`, `?access_token=`, a `lastEventId`
// holding a token): every value is kept only where the parameter is one the API takes and the
// value has that parameter's shape; anything else is logged as `[redacted]`.
import type { FastifyRequest } from 'fastify';
import { RUN_ID_PATTERN } from '@anneal/protocol';
import { isEventId } from '@anneal/store';

export const REDACTED = '[redacted]';

const RUN_ID = new RegExp(RUN_ID_PATTERN);
/** Query parameters of the API and the values a log line may show for each. */
const SAFE_VALUE: Record<string, (value: string) => boolean> = {
  state: (v) => /^[a-z_]{1,32}$/.test(v),
  kind: (v) => /^[a-z]{1,16}$/.test(v),
  limit: (v) => /^\d{1,8}$/.test(v),
  fromStep: (v) => /^\d{1,12}$/.test(v),
  cursor: (v) => RUN_ID.test(v),
  lastEventId: isEventId,
  names: (v) => /^[A-Za-z0-9_.:/,-]{0,512}$/.test(v),
  // rollouts and eval items (free text such as grep and prompt stays redacted)
  ...Object.fromEntries(
    ['step', 'checkpoint', 'budget'].map((n) => [n, (v: string) => /^\d{1,12}$/.test(v)]),
  ),
  ...Object.fromEntries(
    ['sort', 'order', 'role', 'finish'].map((n) => [n, (v: string) => /^[A-Za-z_]{1,32}$/.test(v)]),
  ),
};

function decoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/** `url` with every query value that is not a known parameter's plain value redacted. */
export function redactUrl(url: string): string {
  const mark = url.indexOf('?');
  if (mark < 0) return url;
  const pairs = url
    .slice(mark + 1)
    .split('&')
    .map((pair) => {
      if (pair === '') return pair;
      const eq = pair.indexOf('=');
      const name = decoded(eq < 0 ? pair : pair.slice(0, eq));
      const value = eq < 0 ? '' : decoded(pair.slice(eq + 1));
      const safe =
        name !== undefined && Object.hasOwn(SAFE_VALUE, name) ? SAFE_VALUE[name] : undefined;
      if (!safe) return REDACTED;
      return value !== undefined && safe(value) ? pair : `${pair.slice(0, eq)}=${REDACTED}`;
    });
  return `${url.slice(0, mark)}?${pairs.join('&')}`;
}

/** The pino `req` serializer (Fastify's, with the URL redacted and no Accept-Version echo). */
export function serializeRequest(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
