// A real browser for the console tests: Debian's chromium (or CHROMIUM_BIN), driven by
// playwright-core over CDP. Without one the test fails with how to get it, never skips.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';
// @ts-expect-error: a plain .mjs build script without declarations
import { bundleConsole } from '../../../scripts/bundle-console.mjs';

/** CHROMIUM_BIN, else `chromium` on PATH: what scripts/prerequisites.mjs checks for npm test. */
export function chromiumPath(): string {
  const configured = process.env.CHROMIUM_BIN;
  const found =
    configured ??
    (process.env.PATH ?? '')
      .split(path.delimiter)
      .map((dir) => path.join(dir, 'chromium'))
      .find((file) => existsSync(file));
  if (!found || !existsSync(found)) {
    throw new Error(
      `no Chromium for the console's browser tests (${configured ? `CHROMIUM_BIN=${configured}` : 'chromium on PATH'}): ` +
        'apt-get install -y chromium | brew install --cask chromium, or CHROMIUM_BIN=/path/to/chrome',
    );
  }
  return found;
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true });
}

/** The console bundled from its sources into a temporary folder (never a stale dist/). */
export async function bundledConsole(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'anneal-console-'));
  await (bundleConsole as (o: { outdir: string }) => Promise<unknown>)({ outdir: dir });
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
