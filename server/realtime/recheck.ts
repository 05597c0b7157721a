import type { Logger } from "../lib/logger";
import { singleFlight } from "../lib/single-flight";
import type { Socket } from "./connection";
import type { Grant } from "./grants";

const BATCH = 1000;
const RETRY_MS = 5000;

type Held = { ws: Socket; channel: string; grant: Grant };

/** What standingCredentials judges of a grant: grants alike in all of it stand or fall together. */
const credentialKey = (g: Grant) =>
  `${g.organizationId}|${g.credential.sessionId}|${g.credential.grantId ?? ""}|${g.credential.apiKeyId}|${g.credential.keyDigest}|${[...(g.permissions ?? [])].sort().join(",")}`;

/**
 * After a revocation of `everything` (this instance may have missed some while its bus was down):
 * every subscription's credential is checked against the database again, each distinct
 * credential once, and the sockets holding one that no longer stands are ended. While the
 * database cannot answer, it tries again every few seconds; the sockets stay meanwhile (cutting
 * every client of the instance would not make a missed revocation take effect any sooner).
 */
export function createRecheck(deps: {
  sockets: Set<Socket>;
  standing(grants: Grant[]): Promise<Set<number>>;
  end(ws: Socket): void;
  logger: Logger;
  retryMs?: number;
}) {
  let timer: ReturnType<typeof setTimeout> | undefined;

  async function pass() {
    clearTimeout(timer);
    const byCredential = new Map<string, Held[]>();
    for (const ws of deps.sockets) {
      for (const [channel, grant] of ws.data.subscriptions) {
        if (!grant) continue;
        const k = credentialKey(grant);
        const held = byCredential.get(k);
        if (held) held.push({ ws, channel, grant });
        else byCredential.set(k, [{ ws, channel, grant }]);
      }
    }
    const groups = [...byCredential.values()];
    for (let i = 0; i < groups.length; i += BATCH) {
      const batch = groups.slice(i, i + BATCH);
      const standing = await deps.standing(batch.map((held) => held[0]!.grant));
      batch.forEach((held, j) => {
        if (standing.has(j)) return;
        // Only sockets still open and still holding that very subscription.
        for (const h of held) if (deps.sockets.has(h.ws) && h.ws.data.subscriptions.get(h.channel) === h.grant) deps.end(h.ws);
      });
    }
  }

  /** One pass at a time; a revocation during a pass asks for another after it. */
  const passes = singleFlight(pass);

  function run() {
    passes.run().catch((e) => {
      deps.logger.warn({ err: (e as Error).message }, "realtime: credentials not re-checked; trying again");
      clearTimeout(timer);
      timer = setTimeout(run, deps.retryMs ?? RETRY_MS);
      timer.unref?.();
    });
  }

  return {
    run,
    stop: () => clearTimeout(timer),
  };
}
