import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { TestExchange } from './harness.js';

// What the console's browser tests share: Debian's chromium through playwright-core, a browser
// context per visitor, signing in, screenshots checked not to be blank, and axe-core.

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SHOTS = process.env.CONSOLE_SCREENSHOTS ?? fileURLToPath(new URL('./.artifacts/console/', import.meta.url));
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export const LAPTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

export interface ConsoleBrowser {
  /** A browser of its own (own cookies), at the console, at a laptop's size unless told. */
  visit(hash?: string, viewport?: { width: number; height: number }): Promise<Page>;
  close(): Promise<void>;
}

export async function consoleBrowser(ex: () => TestExchange): Promise<ConsoleBrowser> {
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
  const contexts: BrowserContext[] = [];
  mkdirSync(SHOTS, { recursive: true });
  return {
    async visit(hash = '', viewport = LAPTOP) {
      const context = await browser.newContext({ baseURL: ex().url, viewport });
      contexts.push(context);
      const page = await context.newPage();
      await page.goto(`/console/${hash}`);
      return page;
    },
    async close() {
      for (const c of contexts) await c.close().catch(() => undefined);
      await browser.close();
    },
  };
}

export async function signInAsOwner(page: Page, apiKey: string): Promise<void> {
  await page.getByLabel('Owner agent API key').fill(apiKey);
  await page.locator('#owner-signin button[type=submit]').click();
  await page.getByRole('heading', { name: 'Approvals' }).waitFor();
}

/** Saves a screenshot and checks it is not blank: its pixels take many values. */
export async function screenshot(page: Page, name: string): Promise<void> {
  const png = await page.screenshot({ fullPage: true });
  writeFileSync(join(SHOTS, `${name}.png`), png);
  expect(distinctBytes(png), `${name}.png is not blank`).toBeGreaterThan(16);
}

/** How many distinct byte values the PNG's decompressed image data holds (a blank page: very few). */
function distinctBytes(png: Buffer): number {
  const idat: Buffer[] = [];
  for (let at = 8; at < png.length;) {
    const length = png.readUInt32BE(at);
    if (png.toString('latin1', at + 4, at + 8) === 'IDAT') idat.push(png.subarray(at + 8, at + 8 + length));
    at += 12 + length;
  }
  return new Set(inflateSync(Buffer.concat(idat))).size;
}

/** axe-core in the page: every violation it finds, of any impact (none expected). */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = await page.evaluate(async () => (globalThis as unknown as { axe: { run(): Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }> } }).axe.run());
  return result.violations.map((v) => `${v.id} (${v.impact}, ${v.nodes.length}): ${JSON.stringify(v.nodes.slice(0, 3).map((n) => n.target))}`);
}

/** D23.2: the page fits the screen — nothing wider than the window — and the sections' bar is one row (it scrolls sideways). */
export async function layoutProblems(page: Page): Promise<string[]> {
  const { pageWidth, window, navRows } = await page.evaluate(`({
    pageWidth: document.documentElement.scrollWidth,
    window: innerWidth,
    navRows: new Set([...document.querySelectorAll('#nav a')].map((a) => Math.round(a.getBoundingClientRect().top))).size,
  })`) as { pageWidth: number; window: number; navRows: number };
  return [
    ...(pageWidth > window ? [`the page is ${pageWidth}px wide in a ${window}px window`] : []),
    ...(navRows > 1 ? [`the navigation wraps into ${navRows} rows`] : []),
  ];
}
