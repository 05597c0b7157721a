import { useState } from "preact/hooks";
import { api, ok } from "../api";
import { useIsAdmin, useSession } from "../context";
import { CopyButton, Empty, ErrorBox, Field, useAction, useLoad, When } from "../ui";

const PERMISSIONS = [
  { id: "numbers.read", text: "Read numbers" },
  { id: "numbers.lock", text: "Lock and unlock numbers" },
  { id: "messages.read", text: "Read messages" },
  { id: "webhooks.receive", text: "Manage webhook integrations" },
] as const;
type Permission = (typeof PERMISSIONS)[number]["id"];

/** The organization's API keys: a new or regenerated key is shown once, with a copy button. */
export function ApiKeysPage() {
  if (!useIsAdmin())
    return (
      <Empty>
        <p>Only owners and admins of the organization manage API keys. Ask one of them for a key with the permissions you need.</p>
      </Empty>
    );
  return <ApiKeys />;
}

function ApiKeys() {
  const { orgId } = useSession();
  const keys = useLoad(async () => (await ok(api.GET("/api/api-keys"))).data, [orgId]);
  const [shown, setShown] = useState<{ name: string; key: string } | null>(null);
  const [name, setName] = useState("");
  const [permissions, setPermissions] = useState<Permission[]>(["numbers.read", "messages.read"]);
  const action = useAction();
  const act = (fn: () => Promise<unknown>) =>
    action.run(async () => {
      await fn();
      keys.reload();
    });

  return (
    <section>
      <form
        class="card"
        aria-label="Create an API key"
        onSubmit={(e) => {
          e.preventDefault();
          act(async () => {
            const created = await ok(api.POST("/api/api-keys", { body: { name: name.trim(), permissions } }));
            setShown({ name: created.api_key.name, key: created.plain_text_key });
            setName("");
          });
        }}
      >
        <h2>Create an API key</h2>
        <Field label="Key name" name="key-name" required value={name} onInput={setName} hint="What uses it, for example “CI signup tests”." />
        <fieldset>
          <legend>Permissions</legend>
          {PERMISSIONS.map((p) => (
            <div class="field check" key={p.id}>
              <input
                id={`perm-${p.id}`}
                type="checkbox"
                checked={permissions.includes(p.id)}
                onChange={(e) => setPermissions((old) => ((e.target as HTMLInputElement).checked ? [...old, p.id] : old.filter((x) => x !== p.id)))}
              />
              <label for={`perm-${p.id}`}>
                {p.text} (<code>{p.id}</code>)
              </label>
            </div>
          ))}
        </fieldset>
        <button type="submit" disabled={action.busy}>
          Create key
        </button>
      </form>
      {shown && (
        <div class="card" role="status">
          <h2>Key “{shown.name}”</h2>
          <p>Copy it now: it is shown only once.</p>
          <p class="secret mono" data-testid="plain-key">
            {shown.key}
          </p>
          <CopyButton text={shown.key} what="the key" />{" "}
          <button type="button" onClick={() => setShown(null)}>
            Done
          </button>
        </div>
      )}
      <ErrorBox error={keys.error ?? action.error} />
      {keys.data?.length === 0 && (
        <Empty>
          <p>No API keys yet. Create one above for your tests or CI; it reads numbers and messages without anyone's password.</p>
        </Empty>
      )}
      {keys.data && keys.data.length > 0 && (
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">API keys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                <th scope="col">Permissions</th>
                <th scope="col">Last used</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {keys.data.map((k) => (
                <tr key={k.id}>
                  <td>{k.name}</td>
                  <td class="mono">{k.key_prefix}…</td>
                  <td>{k.permissions.join(", ")}</td>
                  <td>
                    <When at={k.last_used_at} />
                  </td>
                  <td>
                    <div class="actions">
                      <button
                        type="button"
                        aria-label={`Regenerate ${k.name}`}
                        disabled={action.busy}
                        onClick={() =>
                          confirm(`Regenerate “${k.name}”? The current key stops working at once.`) &&
                          act(async () => {
                            const again = await ok(api.POST("/api/api-keys/{api_key}/regenerate", { params: { path: { api_key: k.id } } }));
                            setShown({ name: again.api_key.name, key: again.plain_text_key });
                          })
                        }
                      >
                        Regenerate
                      </button>
                      <button
                        type="button"
                        class="danger"
                        aria-label={`Delete ${k.name}`}
                        disabled={action.busy}
                        onClick={() =>
                          confirm(`Delete “${k.name}”? It stops working at once.`) &&
                          act(() => ok(api.DELETE("/api/api-keys/{api_key}", { params: { path: { api_key: k.id } } })))
                        }
                      >
                        Delete
                      </button>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
