import { useState } from "preact/hooks";
import { api, type HostedNumber, ok } from "../api";
import { useIsAdmin, useSession } from "../context";
import { useReloadOn } from "../realtime";
import { Countdown, Empty, ErrorBox, Link, useAction, useLoad } from "../ui";

/** The organization's numbers with their lock state, live; ordering and claiming for admins. */
export function NumbersPage() {
  const { orgId } = useSession();
  const admin = useIsAdmin();
  const numbers = useLoad(async () => (await ok(api.GET("/api/numbers"))).data, [orgId]);
  const teams = useLoad(async () => (admin ? (await ok(api.GET("/api/teams"))).data : []), [orgId, admin]);
  const action = useAction();

  useReloadOn(orgId, ["number.locked", "number.unlocked"], () => numbers.reload());

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
            <NumberCard key={n.id} number={n} orgId={orgId} teams={admin ? (teams.data ?? []) : []} act={act} busy={action.busy} />
          ))}
        </ul>
      )}
    </section>
  );
}

type Team = { id: number; name: string };

function NumberCard(props: { number: HostedNumber; orgId: number; teams: Team[]; act: (fn: () => Promise<unknown>) => void; busy: boolean }) {
  const n = props.number;
  const mine = n.organizations.find((o) => o.id === props.orgId);
  const [editing, setEditing] = useState(false);
  const [alias, setAlias] = useState(mine?.alias ?? "");
  const [team, setTeam] = useState(mine?.team_id ? String(mine.team_id) : "");
  const ours = n.lock !== null && n.lock.organization_id === props.orgId;
  const teamName = n.teams.find((t) => t.id === mine?.team_id)?.name;
  const lock = (body: { duration_seconds: number; release_on_message?: boolean }) =>
    props.act(() => ok(api.POST("/api/numbers/{id}/lock", { params: { path: { id: n.id } }, body })));
  return (
    <li class="card">
      <h2>
        <span class="mono">{n.number}</span> {mine?.alias && <span class="alias">{mine.alias}</span>}
      </h2>
      <p class="meta">
        {n.type} · {n.status} · {n.messages_received_count} {n.messages_received_count === 1 ? "message" : "messages"}
        {teamName ? ` · team ${teamName}` : ""}
      </p>
      <p class="lock">
        {n.locked ? (
          n.lock ? (
            <>
              Locked by your organization, <Countdown until={n.lock.locked_until} />
              {n.lock.release_on_message && `, until the next message${n.lock.sender ? ` from ${n.lock.sender}` : ""}`}
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
            <button type="button" disabled={props.busy} aria-label={`Lock ${n.number} for 10 minutes`} onClick={() => lock({ duration_seconds: 600 })}>
              Lock
            </button>
          )}
          {!n.locked && (
            <button
              type="button"
              disabled={props.busy}
              aria-label={`Lock until next SMS: ${n.number}`}
              onClick={() => lock({ duration_seconds: 600, release_on_message: true })}
            >
              Lock until next SMS
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
      {n.type === "virtual" && props.teams.length > 0 && (
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            // claim-virtual on a verified BYOS number of the organization assigns it to a team (docs/api-notes.md).
            props.act(() => ok(api.POST("/api/numbers/claim-virtual", { body: { hosted_sim_id: n.id, team_id: Number(team) } })));
          }}
        >
          <label for={`team-${n.id}`}>Team of {n.number}</label>
          <select id={`team-${n.id}`} required value={team} onChange={(e) => setTeam((e.target as HTMLSelectElement).value)}>
            <option value="">Choose a team</option>
            {props.teams.map((t) => (
              <option key={t.id} value={String(t.id)}>
                {t.name}
              </option>
            ))}
          </select>
          <button type="submit" disabled={props.busy}>
            Assign
          </button>
        </form>
      )}
    </li>
  );
}
