import { useState } from "preact/hooks";
import { api, ok } from "../api";
import { ErrorBox, useAction, useLoad, When } from "../ui";

type Redelivered = { message: string; data: { delivery_id: number; event_id: string; event_type: string } };

/**
 * A webhook's delivery log: every attempt with its answer, newest first; admins redeliver a
 * record's event. A new `reloadKey` (after a test or a replay) loads it again.
 */
export function Logs({ id, admin, reloadKey = 0 }: { id: number; admin: boolean; reloadKey?: number }) {
  const [redelivered, setRedelivered] = useState<Redelivered | null>(null);
  const action = useAction();
  const logs = useLoad(
    async () =>
      (await ok(api.GET("/api/webhook-integrations/{webhook_integration}/logs", { params: { path: { webhook_integration: id }, query: { per_page: 50 } } })))
        .data,
    [id, reloadKey],
  );
  if (logs.error) return <ErrorBox error={logs.error} />;
  if (!logs.data) return <p role="status">Loading…</p>;
  if (logs.data.length === 0) return <p class="meta">No deliveries yet: send a test, or wait for a message to a mapped team.</p>;
  const redeliver = (log: number) => {
    setRedelivered(null);
    action.run(async () => {
      setRedelivered(
        await ok(api.POST("/api/webhook-integrations/{webhook_integration}/logs/{log}/redeliver", { params: { path: { webhook_integration: id, log } } })),
      );
      logs.reload();
    });
  };
  return (
    <div class="table-wrap">
      {redelivered && (
        <p role="status">
          {redelivered.message} {redelivered.data.event_type} as delivery {redelivered.data.delivery_id}, webhook-id{" "}
          <span class="mono">{redelivered.data.event_id}</span>.
        </p>
      )}
      <ErrorBox error={action.error} />
      <table>
        <caption>Deliveries, newest first</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Event</th>
            <th scope="col">Attempt</th>
            <th scope="col">Status</th>
            <th scope="col">Answer</th>
            {admin && <th scope="col">Actions</th>}
          </tr>
        </thead>
        <tbody>
          {logs.data.map((l) => (
            <tr key={l.id}>
              <td>
                <When at={l.created_at} />
              </td>
              <td>
                {l.event_type}
                {l.message_id ? ` (message ${l.message_id})` : ""}
              </td>
              <td>{l.attempt}</td>
              <td>
                {l.status}
                {l.next_retry_at && (
                  <>
                    , retry at <When at={l.next_retry_at} />
                  </>
                )}
              </td>
              <td>
                {l.http_status ? `HTTP ${l.http_status}` : ""} {l.response_time_ms !== null ? `${l.response_time_ms} ms` : ""} {l.error ?? ""}
                {l.response_body && (
                  <details>
                    <summary>Body</summary>
                    <pre>{l.response_body}</pre>
                  </details>
                )}
              </td>
              {admin && (
                <td>
                  {l.event_type !== "webhook.test" && (
                    <button type="button" disabled={action.busy} aria-label={`Redeliver ${l.event_type} of record ${l.id}`} onClick={() => redeliver(l.id)}>
                      Redeliver
                    </button>
                  )}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
