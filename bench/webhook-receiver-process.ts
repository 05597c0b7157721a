/**
 * The benchmarks' webhook receiver process (started by bench/webhook-receiver.ts): verifies every
 * request with the standardwebhooks library against the secret its parent registered for the
 * path, and reports each receipt to the parent over IPC in batches: [path, message id, text,
 * epoch ms, verified, the event's created_at in epoch ms]. Requests to the bare baseline's path are verified and counted only.
 * With `--count-only` it sends no receipts: it counts distinct deliveries (per path and message)
 * and repeats itself, and answers `{ count: true }` with the counts.
 */
import { Webhook } from "standardwebhooks";

type FromParent = { trust: string; secret: string } | { bareCount: true } | { count: true };
const countOnly = process.argv.includes("--count-only");
const distinct = new Set<string>();
const counted = { duplicates: 0, unverified: 0 };
const secrets = new Map<string, Webhook>();
let pending: [string, number, string, number, boolean, number][] = [];
let bare = 0;
let bareUnverified = 0;

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    const body = await req.text();
    const path = new URL(req.url).pathname.slice(1);
    let verified = true;
    try {
      secrets.get(path)!.verify(body, Object.fromEntries(req.headers));
    } catch {
      verified = false;
    }
    const event = JSON.parse(body);
    if (path === "bare") {
      bare++;
      if (!verified) bareUnverified++;
    } else if (countOnly) {
      const key = `${path}|${event.data.id}`;
      if (!verified) counted.unverified++;
      if (distinct.has(key)) counted.duplicates++;
      else distinct.add(key);
    } else pending.push([path, event.data.id, event.data.text, performance.timeOrigin + performance.now(), verified, Date.parse(event.created_at)]);
    return new Response("ok");
  },
});

setInterval(() => {
  if (pending.length === 0) return;
  process.send!({ receipts: pending });
  pending = [];
}, 10);

process.on("message", (m: FromParent) => {
  if ("trust" in m) secrets.set(m.trust, new Webhook(m.secret));
  else if ("count" in m) process.send!({ counted: { distinct: distinct.size, ...counted } });
  else process.send!({ bare, bareUnverified });
});
process.send!({ port: server.port });
