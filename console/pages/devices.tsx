import { useState } from "preact/hooks";
import { api, type Device, ok } from "../api";
import { useIsAdmin, useSession } from "../context";
import { useReloadOn } from "../realtime";
import { CopyButton, Countdown, Empty, ErrorBox, Field, useAction, useLoad, When } from "../ui";

type Registered = { sim_cards: { id: number; sim_slot: number | null; verification_code: string; provider_number: string; code_expires_at: string }[] };
type Code = { cardId: number; slot: number | null; code: string; provider: string; expires: string };
const DEVICE_EVENTS = ["device.status_changed", "device.updated", "sim.verified", "sim.deactivated"];

/** The organization's phones (BYOS devices), their health live; registering shows what to text where. */
export function DevicesPage() {
  const { orgId } = useSession();
  const admin = useIsAdmin();
  // Every page: a plan allows up to a thousand phones, and the newest come last.
  const devices = useLoad(async () => {
    const all = [];
    for (let page = 1; ; page++) {
      const res = await ok(api.GET("/api/byos/devices", { params: { query: { per_page: 100, page } } }));
      all.push(...res.data);
      if (page >= res.meta.last_page) return all;
    }
  }, [orgId]);
  const [codes, setCodes] = useState<Code[]>([]);
  const action = useAction();

  useReloadOn(orgId, DEVICE_EVENTS, () => devices.reload());

  const act = (fn: () => Promise<unknown>) =>
    action.run(async () => {
      await fn();
      devices.reload();
    });
  const list = devices.data ?? [];
  return (
    <section>
      <Register
        onRegistered={(d) => {
          setCodes(
            d.sim_cards.map((c) => ({ cardId: c.id, slot: c.sim_slot, code: c.verification_code, provider: c.provider_number, expires: c.code_expires_at })),
          );
          devices.reload();
        }}
      />
      {codes.length > 0 && <Codes codes={codes} />}
      <ErrorBox error={devices.error ?? action.error} />
      {!devices.loading && list.length === 0 && !devices.error && (
        <Empty>
          <p>No phones yet.</p>
          <p>
            Install the simhost app on an Android phone and sign in, or register one above; to try without a phone, run the simulator: <code>bun run sim</code>.
          </p>
        </Empty>
      )}
      <ul class="cards" aria-label="Devices">
        {list.map((d) => (
          <DeviceCard
            key={d.id}
            device={d}
            admin={admin}
            busy={action.busy}
            act={act}
            onCode={(c) => setCodes((old) => [...old.filter((o) => o.cardId !== c.cardId), c])}
          />
        ))}
      </ul>
    </section>
  );
}

const newAndroidId = () => Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0")).join("");

function Register({ onRegistered }: { onRegistered: (d: Registered) => void }) {
  const [open, setOpen] = useState(false);
  const [androidId, setAndroidId] = useState(newAndroidId);
  const [name, setName] = useState("");
  const [slots, setSlots] = useState("1");
  const { error, busy, run } = useAction();
  if (!open)
    return (
      <div class="toolbar">
        <button
          type="button"
          onClick={() => {
            // A new suggestion each time: the one before may have been registered already.
            setAndroidId(newAndroidId());
            setOpen(true);
          }}
        >
          Register a phone
        </button>
      </div>
    );
  return (
    <form
      class="card"
      aria-label="Register a phone"
      onSubmit={(e) => {
        e.preventDefault();
        run(async () => {
          const body = {
            android_id: androidId.trim(),
            sim_slots: slots === "2" ? [1, 2] : [1],
            device_model: "registered from the console",
            app_version: "console",
            ...(name.trim() ? { device_name: name.trim() } : {}),
          };
          onRegistered(await ok(api.POST("/api/byos/devices/register", { body })));
          setOpen(false);
        });
      }}
    >
      <Field
        label="Android ID"
        name="android_id"
        required
        value={androidId}
        onInput={setAndroidId}
        hint="16 hexadecimal characters, as the phone's app reports it."
      />
      <Field label="Name" name="device_name" value={name} onInput={setName} />
      <div class="field">
        <label for="f-slots">SIM slots</label>
        <select id="f-slots" value={slots} onChange={(e) => setSlots((e.target as HTMLSelectElement).value)}>
          <option value="1">1</option>
          <option value="2">2</option>
        </select>
      </div>
      <ErrorBox error={error} />
      <div class="actions">
        <button type="submit" disabled={busy}>
          Register
        </button>
        <button type="button" onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function Codes({ codes }: { codes: Code[] }) {
  return (
    <section class="card" aria-labelledby="codes-title">
      <h2 id="codes-title">Verify the SIM cards</h2>
      <p>From the phone, text each code below to the provider number. The card turns active here as soon as the SMS arrives.</p>
      <ul>
        {codes.map((c) => (
          <li key={c.cardId}>
            Slot {c.slot ?? "?"}: text <mark class="mono">{c.code}</mark> <CopyButton text={c.code} what={`code ${c.code}`} /> to{" "}
            <span class="mono">{c.provider}</span>, <Countdown until={c.expires} />
          </li>
        ))}
      </ul>
    </section>
  );
}

function DeviceCard(props: { device: Device; admin: boolean; busy: boolean; act: (fn: () => Promise<unknown>) => void; onCode: (c: Code) => void }) {
  const d = props.device;
  const path = { device: d.id };
  const label = d.device_name ?? d.android_id;
  const live = d.status !== "revoked";
  return (
    <li class="card" data-device-id={d.id}>
      <h2>{label}</h2>
      <p>
        <span class={d.is_online ? "status-online" : "status-offline"}>{d.is_online ? "Online" : "Offline"}</span> · {d.status}
      </p>
      <p class="meta">
        Battery {d.battery_level ?? "?"}% · last seen <When at={d.last_seen_at} /> · provider number <span class="mono">{d.provider_number}</span>
      </p>
      <ul aria-label={`SIM cards of ${label}`}>
        {d.sim_cards.map((c) => (
          <li key={c.id}>
            Slot {c.sim_slot ?? "?"}: <span class="mono">{c.phone_number ?? c.pending_phone_number ?? "not verified yet"}</span> · {c.status}
            {c.signal_strength !== null && ` · signal ${c.signal_strength}`}
            {live && c.status !== "active" && (
              <>
                {" "}
                <button
                  type="button"
                  disabled={props.busy}
                  onClick={() =>
                    props.act(async () => {
                      const { data } = await ok(
                        api.POST("/api/byos/devices/{device}/sims/{simCard}/reissue-code", { params: { path: { device: d.id, simCard: c.id } } }),
                      );
                      props.onCode({
                        cardId: c.id,
                        slot: data.sim_slot,
                        code: data.verification_code,
                        provider: data.provider_number,
                        expires: data.code_expires_at,
                      });
                    })
                  }
                >
                  Reissue code
                </button>
              </>
            )}
          </li>
        ))}
      </ul>
      {live && (
        <div class="actions">
          {d.status === "disabled" && (
            <button
              type="button"
              disabled={props.busy}
              onClick={() => props.act(() => ok(api.POST("/api/byos/devices/{device}/enable", { params: { path } })))}
            >
              Enable
            </button>
          )}
          {/* A phone still pending verification cannot be disabled (the API answers 409). */}
          {d.status === "active" && (
            <button
              type="button"
              disabled={props.busy}
              onClick={() => props.act(() => ok(api.POST("/api/byos/devices/{device}/disable", { params: { path } })))}
            >
              Disable
            </button>
          )}
          {props.admin && (
            <button
              type="button"
              class="danger"
              disabled={props.busy}
              onClick={() =>
                confirm(`Revoke ${label}? The phone stops working for good.`) &&
                props.act(() => ok(api.DELETE("/api/byos/devices/{device}", { params: { path } })))
              }
            >
              Revoke
            </button>
          )}
        </div>
      )}
    </li>
  );
}
