import { useEffect, useState } from "preact/hooks";
import { api, type HostedNumber, ok } from "../api";
import { useIsAdmin, useSession } from "../context";
import { listen } from "../realtime";
import { Countdown, Empty, ErrorBox, Link, useAction, useLoad } from "../ui";

/** The organization's numbers with their lock state, live; ordering and claiming for admins. */
export function NumbersPage() {
  const { orgId } = useSession();
  const admin = useIsAdmin();
  const numbers = useLoad(async () => (await ok(api.GET("/api/numbers"))).data, [orgId]);
  const action = useAction();

  useEffect(() => {
    const channel = `private-organization.${orgId}`;
    const offs = ["number.locked", "number.unlocked"].map((event) => listen(channel, event, () => numbers.reload()));
    return () => {
      for (const off of offs) off();
    };
  }, [orgId]);

  const act = (fn: () => Promise<unknown>) =>
    action.run(async () => {
      await fn();
      numbers.reload();
    });
  const list = numbers.data ?? [];
  return (
    <section aria-busy={numbers.loading}>
      {admin && (
        <div class="toolbar">
          <button type="button" disabled={action.busy} onClick={() => act(() => ok(api.POST("/api/numbers/order", { body: {} })))}>
            Order a number from the pool
          </button>
          <button type="button" disabled={action.busy} onClick={() => act(() => ok(api.POST("/api/numbers/claim-shared", { body: {} })))}>
            Claim a shared number
          </button>
        </div>
      )}
      <ErrorBox error={numbers.error ?? action.error} />
      {!numbers.loading && list.length === 0 && !numbers.error && (
        <Empty>
          <p>No numbers yet.</p>
          <p>
            {admin ? "Order one from the pool above, or register your own phone under Devices." : "Ask an owner or admin of the organization to order one."} If
            the pool is empty, an operator adds numbers with <code>simhost pool add +15550001234</code>.
          </p>
        </Empty>
      )}
      {list.length > 0 && (
        <ul class="cards" aria-label="Numbers">
          {list.map((n) => (
            <NumberCard key={n.id} number={n} orgId={orgId} onChange={numbers.reload} act={act} busy={action.busy} />
          ))}
        </ul>
      )}
    </section>
  );
}

function NumberCard(props: { number: HostedNumber; orgId: number; onChange: () => void; act: (fn: () => Promise<unknown>) => void; busy: boolean }) {
  const n = props.number;
  const mine = n.organizations.find((o) => o.id === props.orgId);
  const [editing, setEditing] = useState(false);
  const [alias, setAlias] = useState(mine?.alias ?? "");
  const ours = n.lock !== null && n.lock.organization_id === props.orgId;
  return (
    <li class="card">
      <h2>
        <span class="mono">{n.number}</span> {mine?.alias && <span class="alias">{mine.alias}</span>}
      </h2>
      <p class="meta">
        {n.type} · {n.status} · {n.messages_received_count} messages
      </p>
      <p class="lock">
        {n.locked ? (
          n.lock ? (
            <>
              Locked by your organization, <Countdown until={n.lock.locked_until} />
            </>
          ) : (
            "Locked by another organization"
          )
        ) : (
          "Unlocked"
        )}
      </p>
      {editing ? (
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            props.act(async () => {
              await ok(api.PATCH("/api/numbers/{id}/alias", { params: { path: { id: n.id } }, body: { alias: alias.trim() || null } }));
              setEditing(false);
            });
          }}
        >
          <label for={`alias-${n.id}`}>Alias for {n.number}</label>
          <input id={`alias-${n.id}`} value={alias} maxLength={64} onInput={(e) => setAlias((e.target as HTMLInputElement).value)} />
          <button type="submit">Save</button>
          <button type="button" onClick={() => setEditing(false)}>
            Cancel
          </button>
        </form>
      ) : (
        <div class="actions">
          <Link href={`/inbox?number=${n.id}`}>Inbox</Link>
          {!n.locked && (
            <button
              type="button"
              disabled={props.busy}
              aria-label={`Lock ${n.number} for 10 minutes`}
              onClick={() => props.act(() => ok(api.POST("/api/numbers/{id}/lock", { params: { path: { id: n.id } }, body: { duration_seconds: 600 } })))}
            >
              Lock
            </button>
          )}
          {ours && (
            <button
              type="button"
              disabled={props.busy}
              aria-label={`Unlock ${n.number}`}
              onClick={() => props.act(() => ok(api.POST("/api/numbers/{id}/unlock", { params: { path: { id: n.id } } })))}
            >
              Unlock
            </button>
          )}
          <button type="button" aria-label={`Edit the alias of ${n.number}`} onClick={() => setEditing(true)}>
            Alias
          </button>
        </div>
      )}
    </li>
  );
}
