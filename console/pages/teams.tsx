import { useState } from "preact/hooks";
import { api, ok } from "../api";
import { useIsAdmin, useSession } from "../context";
import { Empty, ErrorBox, Field, useAction, useLoad } from "../ui";

/** Teams of the organization and their members; owners and admins create, rename, delete and change members. */
export function TeamsPage() {
  const { orgId } = useSession();
  const admin = useIsAdmin();
  const teams = useLoad(async () => (await ok(api.GET("/api/teams"))).data, [orgId]);
  const [name, setName] = useState("");
  const action = useAction();
  const act = (fn: () => Promise<unknown>) =>
    action.run(async () => {
      await fn();
      teams.reload();
    });
  return (
    <section>
      {admin && (
        <form
          class="inline"
          aria-label="Create a team"
          onSubmit={(e) => {
            e.preventDefault();
            act(async () => {
              await ok(api.POST("/api/teams", { body: { name: name.trim() } }));
              setName("");
            });
          }}
        >
          <Field label="New team name" name="team-name" required value={name} onInput={setName} />
          <button type="submit" disabled={action.busy}>
            Create team
          </button>
        </form>
      )}
      <ErrorBox error={teams.error ?? action.error} />
      {teams.data?.length === 0 && (
        <Empty>
          <p>No teams yet. {admin ? "Create one above, then give it numbers and members." : "Owners and admins create teams."}</p>
        </Empty>
      )}
      <ul class="cards" aria-label="Teams">
        {teams.data?.map((t) => (
          <Team key={t.id} id={t.id} name={t.name} admin={admin} onChange={teams.reload} />
        ))}
      </ul>
    </section>
  );
}

function Team(props: { id: number; name: string; admin: boolean; onChange: () => void }) {
  const team = useLoad(async () => (await ok(api.GET("/api/teams/{team}", { params: { path: { team: props.id } } }))).data, [props.id]);
  const [email, setEmail] = useState("");
  const action = useAction();
  const path = { team: props.id };
  const act = (fn: () => Promise<unknown>) =>
    action.run(async () => {
      await fn();
      team.reload();
    });
  const members = team.data?.members ?? [];
  return (
    <li class="card">
      <h2>{props.name}</h2>
      {members.length === 0 ? (
        <p class="meta">No members yet.</p>
      ) : (
        <ul aria-label={`Members of ${props.name}`}>
          {members.map((m) => (
            <li key={m.id}>
              {m.name} ({m.email}, {m.role}){" "}
              {props.admin && (
                <button
                  type="button"
                  class="danger"
                  aria-label={`Remove ${m.email} from ${props.name}`}
                  onClick={() => act(() => ok(api.DELETE("/api/teams/{team}/members/{user}", { params: { path: { team: props.id, user: m.id } } })))}
                >
                  Remove
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      {props.admin && (
        <>
          <form
            class="inline"
            onSubmit={(e) => {
              e.preventDefault();
              act(async () => {
                await ok(api.POST("/api/teams/{team}/members", { params: { path }, body: { email: email.trim() } }));
                setEmail("");
              });
            }}
          >
            <label for={`add-${props.id}`}>Add a member of the organization to {props.name} by email</label>
            <input id={`add-${props.id}`} type="email" required value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
            <button type="submit">Add</button>
          </form>
          <div class="actions">
            <button
              type="button"
              class="danger"
              onClick={() =>
                confirm(`Delete the team “${props.name}”? Its numbers go back to the organization.`) &&
                action.run(async () => {
                  await ok(api.DELETE("/api/teams/{team}", { params: { path } }));
                  props.onChange();
                })
              }
            >
              Delete team
            </button>
          </div>
        </>
      )}
      <ErrorBox error={team.error ?? action.error} />
    </li>
  );
}
