import { useState } from "preact/hooks";
import { api, ok } from "../api";
import { describeEventTypes } from "../event-types";
import { ErrorBox, useAction } from "../ui";
import { EventTypePicker } from "./webhook-events";

type Answer = { message: string; data: { deliveries: number; since: string; until: string; event_types: string[] } };

/** `datetime-local` wants local time without a zone: "2026-11-23T20:30". */
const localInput = (d: Date) => new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
/**
 * The default window's end: the whole minute at least a minute after `now`. The field keeps
 * minutes only, so "now plus a minute" cut to its minute could end seconds after `now` and leave
 * out what happens while the form is filled in.
 */
const untilDefault = (now: number) => new Date(Math.ceil(now / 60_000) * 60_000 + 60_000);

/**
 * Replay a window of the webhook's events (at most 7 days) as new deliveries under their own
 * webhook-ids; no event type chosen means every type it is subscribed to. Admins and owners only.
 */
export function Replay({ id, name, onReplayed }: { id: number; name: string; onReplayed?: () => void }) {
  const [open, setOpen] = useState(false);
  const [since, setSince] = useState("");
  const [until, setUntil] = useState("");
  const [types, setTypes] = useState<string[]>([]);
  const [answer, setAnswer] = useState<Answer | null>(null);
  const action = useAction();
  const toggle = (
    <div class="actions">
      <button
        type="button"
        aria-expanded={open}
        aria-controls={`replay-${id}`}
        onClick={() => {
          // The default window is the last hour as of opening the form, not of the page's first render.
          if (!open) {
            setSince(localInput(new Date(Date.now() - 3_600_000)));
            setUntil(localInput(untilDefault(Date.now())));
          }
          setOpen(!open);
        }}
      >
        {open ? "Hide replay" : "Replay…"}
      </button>
    </div>
  );
  if (!open) return toggle;
  return (
    <>
      {toggle}
      <form
        id={`replay-${id}`}
        aria-label={`Replay events of ${name}`}
        onSubmit={(e) => {
          e.preventDefault();
          setAnswer(null);
          action.run(async () => {
            const body = {
              since: new Date(since).toISOString(),
              until: new Date(until).toISOString(),
              ...(types.length > 0 ? { event_types: types } : {}),
            };
            setAnswer(await ok(api.POST("/api/webhook-integrations/{webhook_integration}/replay", { params: { path: { webhook_integration: id } }, body })));
            onReplayed?.();
          });
        }}
      >
        <h3>Replay events</h3>
        <p class="meta">Sends the events of a window (at most 7 days) again, each under its own webhook-id, so your receiver can deduplicate.</p>
        <div class="field">
          <label for={`replay-since-${id}`}>Since</label>
          <input id={`replay-since-${id}`} type="datetime-local" required value={since} onInput={(e) => setSince((e.target as HTMLInputElement).value)} />
        </div>
        <div class="field">
          <label for={`replay-until-${id}`}>Until</label>
          <input id={`replay-until-${id}`} type="datetime-local" required value={until} onInput={(e) => setUntil((e.target as HTMLInputElement).value)} />
        </div>
        <EventTypePicker
          id={`replay-events-${id}`}
          legend="Event types to replay"
          value={types}
          onChange={setTypes}
          hint="None chosen: every type the webhook is subscribed to."
        />
        <div class="actions">
          <button type="submit" disabled={action.busy}>
            Replay
          </button>
        </div>
        {answer && (
          <p role="status" data-testid={`replay-answer-${id}`}>
            {answer.message} {answer.data.deliveries} {answer.data.deliveries === 1 ? "delivery" : "deliveries"} of{" "}
            {describeEventTypes(answer.data.event_types)}, from {new Date(answer.data.since).toLocaleString()} to {new Date(answer.data.until).toLocaleString()}
            .
          </p>
        )}
        <ErrorBox error={action.error} />
      </form>
    </>
  );
}
