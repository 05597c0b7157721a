import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";

/**
 * The web console's browser bundle, built by Bun's bundler from console/ the first time it is
 * asked for and kept in memory for the life of the process (no build step, no files written).
 * Asset names carry a content hash, so browsers may keep them forever; only index.html is
 * revalidated. Every asset comes from the project's own packages: no CDN, no other origin.
 */
export type ConsoleAsset = { body: Uint8Array<ArrayBuffer>; type: string };
export type ConsoleBundle = {
  assets: Map<string, ConsoleAsset>;
  /** Paths (under /assets/) of the entry script and the style sheets index.html loads. */
  entry: string;
  styles: string[];
  /** Gzipped bytes of the JavaScript the first page loads (entry and the chunks it imports statically). */
  firstPageGzipBytes: number;
};

const ENTRY = new URL("../../console/main.tsx", import.meta.url).pathname;
export const ASSET_PREFIX = "/assets/";

/**
 * Packages' browser builds. Bun's bundler picks them from package.json's "browser" field, except
 * when it runs inside `bun test`, which resolves pusher-js (and qrcode) to their Node builds.
 */
const browserBuilds: import("bun").BunPlugin = {
  name: "browser-builds",
  setup(build) {
    const pusher = join(dirname(Bun.resolveSync("pusher-js/package.json", import.meta.dir)), "dist", "web", "pusher.js");
    const qrcode = join(dirname(Bun.resolveSync("qrcode/package.json", import.meta.dir)), "lib", "browser.js");
    build.onResolve({ filter: /^pusher-js$/ }, () => ({ path: pusher }));
    build.onResolve({ filter: /^qrcode$/ }, () => ({ path: qrcode }));
  },
};

let pending: Promise<ConsoleBundle> | undefined;

/** The bundle, built once per process (a failed build is retried on the next call). */
export function consoleBundle(): Promise<ConsoleBundle> {
  pending ??= build().catch((e) => {
    pending = undefined;
    throw e;
  });
  return pending;
}

async function build(): Promise<ConsoleBundle> {
  const result = await Bun.build({
    entrypoints: [ENTRY],
    target: "browser",
    format: "esm",
    splitting: true,
    minify: true,
    naming: { entry: "[name]-[hash].[ext]", chunk: "chunk-[hash].[ext]", asset: "[name]-[hash].[ext]" },
    define: { "process.env.NODE_ENV": '"production"' },
    plugins: [browserBuilds],
  });
  if (!result.success) throw new Error(`console bundle failed: ${result.logs.map(String).join("\n")}`);
  const assets = new Map<string, ConsoleAsset>();
  let entry = "";
  const styles: string[] = [];
  const imports = new Map<string, string[]>();
  for (const output of result.outputs) {
    const name = output.path.replace(/^.*\//, "");
    const body = new Uint8Array(await output.arrayBuffer());
    const type = name.endsWith(".css") ? "text/css; charset=utf-8" : name.endsWith(".js") ? "text/javascript; charset=utf-8" : output.type;
    assets.set(name, { body, type });
    if (output.kind === "entry-point") entry = name;
    if (name.endsWith(".css")) styles.push(name);
    if (name.endsWith(".js")) imports.set(name, staticImports(new TextDecoder().decode(body)));
  }
  return { assets, entry, styles, firstPageGzipBytes: firstPageBytes(entry, assets, imports) };
}

/** Chunks a module imports statically (`import ... from "./chunk-x.js"`), not those it loads on demand. */
function staticImports(code: string): string[] {
  return [...code.matchAll(/(?:^|[;}\s])import\s*(?:[^"'();]*?from\s*)?["']\.\/([^"']+\.js)["']/g)].map((m) => m[1]!);
}

function firstPageBytes(entry: string, assets: Map<string, ConsoleAsset>, imports: Map<string, string[]>): number {
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name) || !assets.has(name)) return;
    seen.add(name);
    for (const next of imports.get(name) ?? []) visit(next);
  };
  visit(entry);
  let total = 0;
  for (const name of seen) total += gzipSync(assets.get(name)!.body).length;
  return total;
}
