import { api, ok } from "../api";
import { useSession } from "../context";
import { ErrorBox, useLoad } from "../ui";

type Count = { used: number; limit: number; remaining: number };

/** Devices and this month's messages against the plan's limits (GET /api/usage), for the organization chosen. */
export function PlanPage() {
  const { orgId } = useSession();
  const { data, error } = useLoad(() => ok(api.GET("/api/usage")).then((r) => r.data), [orgId]);
  if (error) return <ErrorBox error={error} />;
  if (!data) return <p role="status">Loading…</p>;
  const month = new Date(data.period.start).toLocaleDateString(undefined, { month: "long", year: "numeric", timeZone: "UTC" });
  return (
    <section>
      <p>
        Plan: <strong>{data.plan}</strong>. An operator changes plans with <code>simhost admin plan set {data.organization_id} &lt;plan&gt;</code>.
      </p>
      <ul class="cards">
        <Usage title="Devices" count={data.devices} note="Phones registered and not revoked. Revoke one on the Devices page to make room." />
        <Usage
          title={`Messages sent in ${month}`}
          count={data.monthly_messages}
          note="Outbound messages this month (UTC), cancelled and expired ones not counted."
        />
      </ul>
    </section>
  );
}

function Usage({ title, count, note }: { title: string; count: Count; note: string }) {
  const id = `usage-${title.replace(/\W+/g, "-").toLowerCase()}`;
  const full = count.remaining === 0;
  return (
    <li class="card">
      <h2 id={id}>{title}</h2>
      <p class="usage-figure">
        {count.used} of {count.limit} used
      </p>
      <meter aria-labelledby={id} min={0} max={count.limit} value={count.used} high={count.limit * 0.8} optimum={0} />
      <p class={full ? "error" : "meta"}>
        {full ? "Limit reached: the API answers 402 plan_limit_reached until the plan grows or usage falls." : `${count.remaining} left. ${note}`}
      </p>
    </li>
  );
}
