import { join } from "node:path";
import type { Subprocess } from "bun";
import { awaitCallback, freePort } from "./realtime-client";

const ROOT = join(import.meta.dir, "../..");

export type Instance = { proc: Subprocess<"ignore", "pipe", "pipe">; baseUrl: string; port: number };

/** `bun server/main.ts` on its own port; resolves once it logs that it listens. */
export async function spawnInstance(env: Record<string, string>): Promise<Instance> {
  const port = freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const proc = Bun.spawn([process.execPath, "server/main.ts"], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: "info", PORT: String(port), PUBLIC_URL: baseUrl, ...env } as Record<string, string>,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = proc.stdout.getReader();
  let seen = "";
  await awaitCallback(
    `instance on ${port} to listen`,
    (done) =>
      void (async () => {
        while (!seen.includes("simhost listening")) {
          const { value, done: ended } = await reader.read();
          if (ended) throw new Error(`instance exited early: ${seen}`);
          seen += new TextDecoder().decode(value);
        }
        reader.releaseLock();
        void proc.stdout.pipeTo(new WritableStream()); // keep draining so the child never blocks
        done(undefined);
      })(),
    60_000,
  );
  return { proc, baseUrl, port };
}
