// Where the browser tests and the console bench find Chromium: CHROMIUM_BIN, else `chromium` on
// PATH — what scripts/prerequisites.mjs checks (and installs) for `npm test` and `npm run bench`.
import { existsSync } from 'node:fs';
import path from 'node:path';

/** The Chromium executable; throws with how to get one when there is none. */
export function chromiumPath(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.CHROMIUM_BIN;
  const found =
    configured ??
    (env.PATH ?? '')
      .split(path.delimiter)
      .map((dir) => path.join(dir, 'chromium'))
      .find((file) => existsSync(file));
  if (!found || !existsSync(found)) {
    throw new Error(
      `no Chromium (${configured ? `CHROMIUM_BIN=${configured}` : 'chromium on PATH'}): ` +
        'apt-get install -y chromium | brew install --cask chromium, or CHROMIUM_BIN=/path/to/chrome',
    );
  }
  return found;
}
