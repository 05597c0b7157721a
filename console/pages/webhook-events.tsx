import { ALL_EVENTS, WEBHOOK_EVENT_TYPES } from "../event-types";

/**
 * Checkboxes for a webhook's event types: "All events" (["*"]) or any of the catalog's types.
 * `value` is what the API takes as `event_types`.
 */
export function EventTypePicker(props: { id: string; legend: string; value: string[]; onChange: (v: string[]) => void; hint?: string }) {
  const all = props.value.includes(ALL_EVENTS);
  const toggle = (t: string, on: boolean) => props.onChange(on ? [...props.value.filter((x) => x !== t), t] : props.value.filter((x) => x !== t));
  return (
    <fieldset aria-describedby={props.hint ? `${props.id}-hint` : undefined}>
      <legend>{props.legend}</legend>
      {props.hint && (
        <small id={`${props.id}-hint`} class="hint">
          {props.hint}
        </small>
      )}
      <div class="field check">
        <input
          id={`${props.id}-all`}
          type="checkbox"
          checked={all}
          onChange={(e) => props.onChange((e.target as HTMLInputElement).checked ? [ALL_EVENTS] : [])}
        />
        <label for={`${props.id}-all`}>All events</label>
      </div>
      {WEBHOOK_EVENT_TYPES.map((t) => (
        <div class="field check" key={t}>
          <input
            id={`${props.id}-${t}`}
            type="checkbox"
            disabled={all}
            checked={all || props.value.includes(t)}
            onChange={(e) => toggle(t, (e.target as HTMLInputElement).checked)}
          />
          <label for={`${props.id}-${t}`}>
            <code>{t}</code>
          </label>
        </div>
      ))}
    </fieldset>
  );
}
