// The web console at /console: the files scripts/bundle-console.mjs builds (index.html,
// console.js, console.css), read once when the app is built and served from memory with a
// strict Content-Security-Policy. The pages are public; every piece of data they show comes from
// the /v1 API with the bearer token the user typed in (docs/console.md).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AnnealError } from '../errors.ts';
import { consoleCatalogue } from '../services/console-catalogue.ts';

/** The files the bundle writes, and how each is served. */
const FILES: Readonly<Record<string, string>> = {
  'index.html': 'text/html; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
};

/**
 * Same origin only, no inline script or style, no eval, and Trusted Types with no policy: the
 * console builds its DOM with textContent and createElement, so any innerHTML-style sink (the
 * way run data could turn into markup) throws in the browser instead of running. `blob:` images
 * are the eval chart, fetched with the bearer header and shown through an object URL.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob:",
  "connect-src 'self'",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

interface Asset {
  type: string;
  body: Buffer;
  etag: string;
}

/** Where `npm run build` puts the console: apps/control-plane/dist/console, found through the
 * package (this module is inlined elsewhere by the CLI bundle, so not relative to it). */
export function defaultConsoleDir(): string {
  const manifest = createRequire(import.meta.url).resolve('@anneal/control-plane/package.json');
  return path.join(path.dirname(manifest), 'dist', 'console');
}

const etagOf = (body: Buffer) =>
  `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;

function readAssets(dir: string): Map<string, Asset> | string {
  const assets = new Map<string, Asset>();
  for (const [name, type] of Object.entries(FILES)) {
    let body: Buffer;
    try {
      body = readFileSync(path.join(dir, name));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      return `the console is not built (no ${path.join(dir, name)}): run npm run build`;
    }
    assets.set(name, { type, body, etag: etagOf(body) });
  }
  const catalogue = Buffer.from(JSON.stringify(consoleCatalogue()));
  assets.set('catalogue.json', {
    type: 'application/json; charset=utf-8',
    body: catalogue,
    etag: etagOf(catalogue),
  });
  return assets;
}

export function installConsole(app: FastifyInstance, dir: string): void {
  const assets = readAssets(dir);
  const send = (request: FastifyRequest, reply: FastifyReply, name: string) => {
    if (typeof assets === 'string') throw new AnnealError('ANNEAL_ERR_NOT_FOUND', assets);
    const asset = assets.get(name);
    if (!asset) throw new AnnealError('ANNEAL_ERR_NOT_FOUND', `no console file '${name}'`);
    // no-cache: revalidated on every load (a 304 by ETag), so a new build is seen at once.
    reply.headers({ ...SECURITY_HEADERS, 'cache-control': 'no-cache', etag: asset.etag });
    if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
    return reply.type(asset.type).send(asset.body);
  };
  const hidden = { schema: { hide: true } };
  // Relative asset URLs in index.html need the trailing slash.
  app.get('/console', hidden, (_request, reply) => reply.redirect('/console/', 302));
  app.get('/console/', hidden, (request, reply) => send(request, reply, 'index.html'));
  app.get<{ Params: { file: string } }>('/console/:file', hidden, (request, reply) =>
    send(request, reply, request.params.file),
  );
}
