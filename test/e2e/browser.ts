import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/** Debian's Chromium (or CHROMIUM_PATH); browser tests skip, saying so, where there is none. */
export const CHROMIUM = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => p && existsSync(p));

export function warnIfNoChromium(what: string) {
  if (!CHROMIUM) console.warn(`SKIPPED ${what}: no Chromium found (set CHROMIUM_PATH or \`apt-get install chromium\`).`);
}

/**
 * Headless Chromium as this machine allows it: no sandbox (root), and none of the background
 * connections its closed network would refuse. `extraArgs` add to these.
 */
export function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...extraArgs,
    ],
  });
}
