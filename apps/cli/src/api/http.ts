// One HTTP request through node:http(s), for ApiClient.request. Not fetch: on Node 20 the first
// fetch() initialises undici, about 0.25 s of CPU — more than the rest of `anneal runs ls`
// (bench/startup); a node:http request costs a few milliseconds. Streams (SSE) keep fetch.
import http from 'node:http';
import https from 'node:https';

export interface HttpReply {
  status: number;
  statusText: string;
  text: string;
}

export interface HttpRequest {
  method: string;
  headers: Record<string, string>;
  body?: string;
}

/** Rejects with the socket error (its `code`: ECONNREFUSED, ENOTFOUND…) when there is no reply. */
export function send(url: URL, init: HttpRequest): Promise<HttpReply> {
  const transport = url.protocol === 'https:' ? https : url.protocol === 'http:' ? http : null;
  if (!transport) {
    return Promise.reject(new Error(`unsupported protocol ${url.protocol} (use http or https)`));
  }
  const headers =
    init.body === undefined
      ? init.headers
      : { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) };
  return new Promise((resolve, reject) => {
    const request = transport.request(url, { method: init.method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          statusText: response.statusMessage ?? '',
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    request.on('error', reject);
    request.end(init.body);
  });
}
