// Entry of every engine worker thread; workerData.entry is the worker module's URL.
// From dist/ (`npm run build`, the images) that module is compiled JavaScript and loads as is.
// From sources (vitest, `node --import tsx`, the `anneal` bin's source fallback) it is
// TypeScript: register tsx first — imported lazily, since it is a dev dependency the images do
// not install — and the "@anneal/source" export condition, so @anneal/* imports inside the
// worker resolve to sources like the thread that started it.
import { register } from 'node:module';
import { workerData } from 'node:worker_threads';

if (workerData.entry.endsWith('.ts')) {
  register(
    'data:text/javascript,export const resolve = (s, c, next) => ' +
      'next(s, { ...c, conditions: [...new Set(["@anneal/source", ...c.conditions])] });',
  );
  const tsx = await import('tsx/esm/api');
  tsx.register();
}
await import(workerData.entry);
