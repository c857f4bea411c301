// A real browser for the console tests: Debian's chromium (or CHROMIUM_BIN), driven by
// playwright-core over CDP. Without one the test fails with how to get it, never skips.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { chromiumPath } from '@anneal/testing';
// @ts-expect-error: a plain .mjs build script without declarations
import { bundleConsole } from '../../../scripts/bundle-console.mjs';

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true });
}

/** The console bundled from its sources into a temporary folder (never a stale dist/). */
export async function bundledConsole(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'anneal-console-'));
  await (bundleConsole as (o: { outdir: string }) => Promise<unknown>)({ outdir: dir });
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
