import { useState } from "preact/hooks";
import type { ApiAnswer } from "../../clients/api";
import { api, ok } from "../api";
import { useIsAdmin, useSession } from "../context";
import { DEFAULT_EVENT_TYPES, describeEventTypes } from "../event-types";
import { CopyButton, Empty, ErrorBox, Field, useAction, useLoad } from "../ui";
import { EventTypePicker } from "./webhook-events";
import { Logs } from "./webhook-logs";
import { Replay } from "./webhook-replay";

type Integration = ApiAnswer<"/api/webhook-integrations", "get">["data"][number];
type Team = { id: number; name: string };
/** The form's check before sending: at least one event type (or all). */
const noTypes = (types: string[]) => (types.length === 0 ? new Error("Choose at least one event type, or All events.") : null);

type TestResult = { success: boolean; http_status: number; response_time_ms: number; error: string | null; response_body: string };

/** Webhook integrations of the organization: create (secret shown once), edit, map to teams, test, logs, rotate. */
export function WebhooksPage() {
  const { orgId } = useSession();
  const admin = useIsAdmin();
  const hooks = useLoad(async () => (await ok(api.GET("/api/webhook-integrations"))).data, [orgId]);
  const teams = useLoad(async () => (await ok(api.GET("/api/teams"))).data, [orgId]);
  const [secret, setSecret] = useState<{ name: string; secret: string } | null>(null);
  return (
    <section>
      {admin && (
        <Create
          onCreated={(name, s) => {
            setSecret({ name, secret: s });
            hooks.reload();
          }}
        />
      )}
      {secret && <SecretOnce name={secret.name} secret={secret.secret} onDone={() => setSecret(null)} />}
      <ErrorBox error={hooks.error} />
      {hooks.data?.length === 0 && (
        <Empty>
          <p>
            No webhooks yet. {admin ? "Create one above, then map it to a team" : "Owners and admins create them"}: every message a mapped team receives is then
            POSTed to its URL, signed with its secret (Standard Webhooks).
          </p>
        </Empty>
      )}
      <ul class="cards wide" aria-label="Webhooks">
        {hooks.data?.map((h) => (
          <Hook key={h.id} hook={h} admin={admin} teams={teams.data ?? []} onChange={hooks.reload} onSecret={(s) => setSecret({ name: h.name, secret: s })} />
        ))}
      </ul>
    </section>
  );
}

function SecretOnce(props: { name: string; secret: string; onDone: () => void }) {
  return (
    <div class="card" role="status">
      <h2>Signing secret of “{props.name}”</h2>
      <p>Copy it now: it is shown only once. Your receiver verifies each delivery's signature with it.</p>
      <p class="secret mono" data-testid="webhook-secret">
        {props.secret}
      </p>
      <CopyButton text={props.secret} what="the secret" />{" "}
      <button type="button" onClick={props.onDone}>
        Done
      </button>
    </div>
  );
}

function Create({ onCreated }: { onCreated: (name: string, secret: string) => void }) {
  const [name, setName] = useState("");
  const [url, setUrl] = useState("");
  const [types, setTypes] = useState<string[]>(DEFAULT_EVENT_TYPES);
  const { error, busy, run } = useAction();
  return (
    <form
      class="card"
      aria-label="Create a webhook"
      onSubmit={(e) => {
        e.preventDefault();
        run(async () => {
          const invalid = noTypes(types);
          if (invalid) throw invalid;
          const { data } = await ok(api.POST("/api/webhook-integrations", { body: { name: name.trim(), url: url.trim(), event_types: types } }));
          onCreated(data.name, data.secret);
          setName("");
          setUrl("");
          setTypes(DEFAULT_EVENT_TYPES);
        });
      }}
    >
      <h2>Create a webhook</h2>
      <Field label="Webhook name" name="hook-name" required value={name} onInput={setName} />
      <Field label="URL" name="hook-url" type="url" required value={url} onInput={setUrl} hint="Where deliveries are POSTed (http or https)." />
      <EventTypePicker
        id="hook-events"
        legend="Event types"
        value={types}
        onChange={setTypes}
        hint="Message events follow the team mappings; device, SIM and number events go to every subscribed webhook."
      />
      <ErrorBox error={error} />
      <button type="submit" disabled={busy}>
        Create webhook
      </button>
    </form>
  );
}

function Hook(props: { hook: Integration; admin: boolean; teams: Team[]; onChange: () => void; onSecret: (s: string) => void }) {
  const h = props.hook;
  const path = { webhook_integration: h.id };
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(h.name);
  const [url, setUrl] = useState(h.url);
  const [types, setTypes] = useState<string[]>(h.event_types);
  const [test, setTest] = useState<TestResult | null>(null);
  const [showLogs, setShowLogs] = useState(false);
  // Bumped after a test or a replay: an open delivery log loads again.
  const [logsKey, setLogsKey] = useState(0);
  const [team, setTeam] = useState("");
  const [mode, setMode] = useState<"always" | "lock_required">("always");
  const action = useAction();
  const act = (fn: () => Promise<unknown>) =>
    action.run(async () => {
      await fn();
      props.onChange();
    });
  const unmapped = props.teams.filter((t) => !h.mappings.some((m) => m.team_id === t.id));
  // The team chosen while it is still unmapped, else the first unmapped one (the one just mapped leaves the list).
  const chosen = unmapped.some((t) => String(t.id) === team) ? team : String(unmapped[0]?.id ?? "");

  return (
    <li class="card">
      <h2>{h.name}</h2>
      <p class="mono meta">{h.url}</p>
      <p class="meta">
        {h.is_active ? "Active" : "Inactive"} · timeout {h.timeout_seconds} s · {h.retry_count} retries
      </p>
      <p class="meta" data-testid={`events-${h.id}`}>
        Events: {describeEventTypes(h.event_types)}
      </p>
      {editing && (
        <form
          aria-label={`Edit ${h.name}`}
          onSubmit={(e) => {
            e.preventDefault();
            act(async () => {
              const invalid = noTypes(types);
              if (invalid) throw invalid;
              await ok(
                api.PATCH("/api/webhook-integrations/{webhook_integration}", {
                  params: { path },
                  body: { name: name.trim(), url: url.trim(), event_types: types },
                }),
              );
              setEditing(false);
            });
          }}
        >
          <Field label="Webhook name" name={`name-${h.id}`} required value={name} onInput={setName} />
          <Field label="URL" name={`url-${h.id}`} type="url" required value={url} onInput={setUrl} />
          <EventTypePicker id={`events-${h.id}`} legend="Event types" value={types} onChange={setTypes} />
          <div class="actions">
            <button type="submit">Save</button>
            <button type="button" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      <h3>Teams</h3>
      {h.mappings.length === 0 ? (
        <p class="meta">Not mapped to any team: nothing is forwarded yet.</p>
      ) : (
        <ul aria-label={`Teams of ${h.name}`}>
          {h.mappings.map((m) => (
            <li key={m.id}>
              {m.team_name} ({m.forwarding_mode === "always" ? "every message" : "only while the team holds the number's lock"}){" "}
              {props.admin && (
                <button
                  type="button"
                  class="danger"
                  aria-label={`Unmap ${m.team_name}`}
                  onClick={() =>
                    act(() =>
                      ok(
                        api.DELETE("/api/webhook-integrations/{webhook_integration}/mappings/{webhook_mapping}", {
                          params: { path: { ...path, webhook_mapping: m.id } },
                        }),
                      ),
                    )
                  }
                >
                  Unmap
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      {props.admin && unmapped.length > 0 && (
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            act(() =>
              ok(
                api.POST("/api/webhook-integrations/{webhook_integration}/mappings", {
                  params: { path },
                  body: { team_id: Number(chosen), forwarding_mode: mode },
                }),
              ),
            );
          }}
        >
          <label for={`team-${h.id}`}>Team</label>
          <select id={`team-${h.id}`} value={chosen} onChange={(e) => setTeam((e.target as HTMLSelectElement).value)}>
            {unmapped.map((t) => (
              <option key={t.id} value={String(t.id)}>
                {t.name}
              </option>
            ))}
          </select>
          <label for={`mode-${h.id}`}>Forward</label>
          <select id={`mode-${h.id}`} value={mode} onChange={(e) => setMode((e.target as HTMLSelectElement).value as "always")}>
            <option value="always">every message</option>
            <option value="lock_required">only under the team's lock</option>
          </select>
          <button type="submit">Map team</button>
        </form>
      )}
      {props.admin && props.teams.length === 0 && <p class="meta">Create a team on the Teams page to map this webhook to it.</p>}
      <div class="actions">
        {props.admin && (
          <button
            type="button"
            disabled={action.busy}
            onClick={() => {
              setTest(null);
              action.run(async () => {
                setTest(await ok(api.POST("/api/webhook-integrations/{webhook_integration}/test", { params: { path } })));
                setLogsKey((k) => k + 1);
              });
            }}
          >
            Send a test
          </button>
        )}
        <button type="button" aria-expanded={showLogs} onClick={() => setShowLogs(!showLogs)}>
          {showLogs ? "Hide deliveries" : "Deliveries"}
        </button>
        {props.admin && (
          <>
            <button
              type="button"
              onClick={() => {
                setName(h.name);
                setUrl(h.url);
                setTypes(h.event_types);
                setEditing(true);
              }}
            >
              Edit
            </button>
            <button
              type="button"
              onClick={() =>
                act(() =>
                  ok(
                    api.PATCH("/api/webhook-integrations/{webhook_integration}", {
                      params: { path },
                      body: { name: h.name, url: h.url, is_active: !h.is_active },
                    }),
                  ),
                )
              }
            >
              {h.is_active ? "Pause" : "Resume"}
            </button>
            <button
              type="button"
              onClick={() =>
                confirm(`Rotate the secret of “${h.name}”? Deliveries are signed with the new one at once.`) &&
                action.run(async () =>
                  props.onSecret((await ok(api.POST("/api/webhook-integrations/{webhook_integration}/regenerate-secret", { params: { path } }))).data.secret),
                )
              }
            >
              Rotate secret
            </button>
            <button
              type="button"
              class="danger"
              onClick={() =>
                confirm(`Delete “${h.name}”?`) && act(() => ok(api.DELETE("/api/webhook-integrations/{webhook_integration}", { params: { path } })))
              }
            >
              Delete
            </button>
          </>
        )}
      </div>
      {test && (
        <p role="status" class={test.success ? "" : "error"}>
          Test {test.success ? "delivered" : "failed"}: HTTP {test.http_status || "none"} in {test.response_time_ms} ms{test.error ? ` (${test.error})` : ""}.
        </p>
      )}
      <ErrorBox error={action.error} />
      {showLogs && <Logs id={h.id} admin={props.admin} reloadKey={logsKey} />}
      {props.admin && <Replay id={h.id} name={h.name} onReplayed={() => setLogsKey((k) => k + 1)} />}
    </li>
  );
}
