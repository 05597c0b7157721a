/**
 * A bench client's private-channel subscription, the way pusher-js makes it: connect, then ask the
 * server's auth endpoint (`POST /api/broadcasting/auth` with a bearer token) for the channel's
 * signature, which also records the grant the subscription is checked against. A signature made
 * with the app secret alone is refused since subscriptions need a grant (issue 14).
 */
import { type Sql, seedDevices } from "./devices-load";

/** One organization with an owner's session token, and `extra` more organizations the same user belongs to. */
export async function seedChannels(sql: Sql, extra = 0) {
  const { orgId, token } = await seedDevices(sql, 0);
  const orgs = await sql<{ id: number }[]>`
    with o as (insert into organizations (name, plan) select 'bench ' || g, 'enterprise' from generate_series(1, ${extra}) g returning id)
    insert into memberships (user_id, organization_id, role)
    select m.user_id, o.id, 'owner' from o, memberships m where m.organization_id = ${orgId}
    returning organization_id as id`;
  return { token, organizations: [orgId, ...orgs.map((o) => Number(o.id))] };
}

/** Opens one connection on `port` and subscribes it to `channel`; resolves once the subscription succeeded. */
export function subscribeOne(port: number, appKey: string, token: string, channel: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/app/${appKey}?protocol=7&client=bench&version=1`);
    ws.onerror = () => reject(new Error("socket error"));
    ws.onmessage = async (e) => {
      const frame = JSON.parse(String(e.data));
      if (frame.event === "pusher:connection_established") {
        const socketId = JSON.parse(frame.data).socket_id;
        const res = await fetch(`http://127.0.0.1:${port}/api/broadcasting/auth`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ socket_id: socketId, channel_name: channel }),
        });
        if (res.status !== 200) return reject(new Error(`channel auth answered ${res.status}: ${await res.text()}`));
        const { auth } = (await res.json()) as { auth: string };
        ws.send(JSON.stringify({ event: "pusher:subscribe", data: { channel, auth } }));
      } else if (frame.event === "pusher_internal:subscription_succeeded") {
        ws.onmessage = null;
        resolve(ws);
      } else if (frame.event === "pusher:subscription_error" || frame.event === "pusher:error") reject(new Error(JSON.stringify(frame)));
    };
  });
}
