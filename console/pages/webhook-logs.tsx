import { api, ok } from "../api";
import { ErrorBox, useLoad, When } from "../ui";

/** A webhook's delivery log: every attempt with its answer, newest first. */
export function Logs({ id }: { id: number }) {
  const logs = useLoad(
    async () =>
      (await ok(api.GET("/api/webhook-integrations/{webhook_integration}/logs", { params: { path: { webhook_integration: id }, query: { per_page: 50 } } })))
        .data,
    [id],
  );
  if (logs.error) return <ErrorBox error={logs.error} />;
  if (!logs.data) return <p role="status">Loading…</p>;
  if (logs.data.length === 0) return <p class="meta">No deliveries yet: send a test, or wait for a message to a mapped team.</p>;
  return (
    <div class="table-wrap">
      <table>
        <caption>Deliveries, newest first</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Event</th>
            <th scope="col">Attempt</th>
            <th scope="col">Status</th>
            <th scope="col">Answer</th>
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
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
