import type { Config } from "../config";
import type { Pool } from "../db/client";
import type { EventTail } from "../events/tail";
import type { BatchHandler, Job, JobHandler, JobQueue } from "../jobs/queue";
import { RetryAfter } from "../jobs/queue";
import type { Clock } from "../lib/clock";
import type { Logger } from "../lib/logger";
import { dispatchScheduled } from "./dispatch";
import { changeStatus, changeStatuses } from "./outbound";
import { countAttempt, deviceSendDeadlines, findOutbound, type OutboundRow, providerDeclined, senderState } from "./outbound-store";
import { paceSims, resumeDevices } from "./pacer";
import { createProviderClient, type ProviderClient } from "./provider-client";

type Deps = { sql: Pool; events: Pick<EventTail, "notify">; logger: Logger; clock?: Clock };
type Payload = { message_id: number };

/**
 * No provider attempt starts within this long of expires_at: its request could reach the
 * provider after it. A send so close to its expiry ends `expired` instead (never sent late).
 */
export const EXPIRY_MARGIN_MS = 500;
/** A send waiting for another organization's lock tries again this long after the lock's end. */
const LOCK_END_MARGIN_MS = 1_000;

/** Doubling from the configured first delay, capped at 10 minutes, with ±20 % jitter. */
export const providerBackoff = (firstSeconds: number) => (attempt: number) =>
  Math.min(firstSeconds * 1000 * 2 ** (attempt - 1), 600_000) * (0.8 + Math.random() * 0.4);

/**
 * One attempt at handing a pool-number message to the provider. A refusal (4xx) fails the
 * message for good; a retryable answer is retried by the queue until the last attempt, which
 * fails the message with the last error so it never stays `sending` forever.
 */
export async function sendThroughProvider(deps: Deps, provider: ProviderClient, job: Job<Payload>, backoff: (attempt: number) => number) {
  const m = await findOutbound(deps.sql, job.payload.message_id);
  if (!m || (m.status !== "queued" && m.status !== "sending")) return;
  const now = () => deps.clock?.now() ?? Date.now();
  const expiresAt = m.expires_at ? Date.parse(m.expires_at) : null;
  if (expiresAt !== null && expiresAt - EXPIRY_MARGIN_MS <= now()) {
    await endUnaccepted(deps, m, "It expired before the provider accepted it");
    return;
  }
  // The number as it is now: deactivated since, the send fails (never sent: its unit comes back
  // unless an earlier call may have reached the provider); locked by another organization
  // since, it waits for the lock's end (API.md: nobody else sends from a locked number).
  const sender = await senderState(deps.sql, m.organization_id, m.hosted_sim_id);
  if (!sender.active) {
    await changeStatus(deps, m.id, "failed", ["queued", "sending"], { error: "Its number no longer sends (deactivated).", neverWentOut: !m.provider_may_have });
    return;
  }
  if (sender.lockedUntil) {
    const until = sender.lockedUntil.getTime() + LOCK_END_MARGIN_MS;
    if (expiresAt !== null && until >= expiresAt - EXPIRY_MARGIN_MS) {
      await endUnaccepted(deps, m, "It expired while another organization held its number's lock");
      return;
    }
    if (job.attempts >= job.max_attempts) {
      const error = "Another organization held its number's lock through every attempt.";
      await changeStatus(deps, m.id, "failed", ["queued", "sending"], { error, neverWentOut: !m.provider_may_have });
      return;
    }
    throw new RetryAfter(until - now(), "another organization holds the number's lock");
  }
  // Each provider call is an attempt: the first counted with the move to `sending`, a retry alone;
  // either marks the message as possibly at the provider until an answer says otherwise. Not
  // moved: cancelled (or expired) meanwhile, never handed to the provider; or, on a retry, a
  // status callback ended it since this job read it (the provider has it: no second call).
  if (m.status === "sending") {
    if (!(await countAttempt(deps.sql, m.id))) return;
  } else if (!(await changeStatus(deps, m.id, "sending", ["queued"], { attempt: true, providerCall: true }))) return;
  const outcome = await provider.send({ id: m.id, from: m.from, to: m.to, body: m.text });
  if (outcome.kind === "accepted") {
    await changeStatus(deps, m.id, "sent", ["queued", "sending"], { externalId: outcome.sid || null });
    return;
  }
  const last = job.attempts >= job.max_attempts;
  if (outcome.kind === "rejected" || last) {
    await changeStatus(deps, m.id, "failed", ["queued", "sending"], { error: outcome.error });
    return;
  }
  // A 429 or 5xx says the provider did not take this call; no answer at all (a timeout, a lost
  // connection) leaves it possibly at the provider. An earlier call left unanswered (the flag as
  // this job read it, before this call set it) may still be there whatever this one's answer.
  const mayHave = outcome.unknown === true || m.provider_may_have;
  if (!mayHave) await providerDeclined(deps.sql, m.id);
  const delay = outcome.retryAfterMs ?? backoff(job.attempts);
  if (expiresAt !== null && now() + delay >= expiresAt - EXPIRY_MARGIN_MS) {
    await endUnaccepted(deps, { id: m.id, provider_may_have: mayHave }, `It expired before the provider accepted it (last answer: ${outcome.error})`);
    return;
  }
  deps.logger.info({ message: m.id, attempt: job.attempts, err: outcome.error }, "provider send will be retried");
  throw new RetryAfter(delay, outcome.error);
}

/**
 * Ends a pool-number send the provider never accepted, its time being up: `expired` (its unit
 * given back) when no call of it can be at the provider; else `failed` "may have been sent" with
 * its unit kept, since `expired` would tell the sender to send it again (a call whose answer
 * never came, or that a restart cut short).
 */
async function endUnaccepted(deps: Pick<Deps, "sql" | "events">, m: Pick<OutboundRow, "id" | "provider_may_have">, why: string) {
  if (m.provider_may_have) {
    const error = `${why}; a call to the provider went unanswered: it may have been sent.`;
    await changeStatus(deps, m.id, "failed", ["queued", "sending"], { error });
  } else await changeStatus(deps, m.id, "expired", ["queued", "sending"], { error: `${why}.` });
}

/**
 * Ends device sends still `queued` whose time is up: `expired` at its expires_at when it has one
 * (handed to the phone or still waiting for it), else `failed` when the phone it was handed to
 * has not picked it up within the device timeout. A send still waiting for its phone without
 * expires_at waits on (the pacer hands it over when the phone is back). One transaction for the
 * batch: a bulk send that expires at once is one statement per outcome, not one per message.
 */
export async function failUnpickedDeviceSends(deps: Pick<Deps, "sql" | "events" | "clock">, messageIds: number[], timeoutSeconds: number) {
  const now = deps.clock?.now() ?? Date.now();
  const expired: number[] = [];
  const failed: number[] = [];
  for (const m of await deviceSendDeadlines(deps.sql, messageIds)) {
    if (m.status !== "queued") continue;
    if (!m.dispatched && (!m.expires_at || m.expires_at.getTime() > now)) continue;
    (m.expires_at ? expired : failed).push(m.id);
  }
  return changeStatuses(deps, [
    // A phone that was handed one and never took it up is told not to send it late.
    { ids: expired, to: "expired", from: ["queued"], extra: { error: "No device picked up the message before it expired." }, callOff: true },
    { ids: failed, to: "failed", from: ["queued"], extra: { error: `No device picked up the message within ${timeoutSeconds} seconds.` }, callOff: true },
  ]);
}

/** The distinct ids a batch of jobs names in its payloads' `key` (a message or a SIM may be named twice). */
const distinctIds = <K extends string>(jobs: Job<Record<K, number>>[], key: K) => [...new Set(jobs.map((j) => j.payload[key]))];

/** The handlers of the outbound queues (registered by server/jobs/workers.ts), with the provider sends' backoff. */
export function outboundHandlers(deps: Deps & { config: Config; jobs: JobQueue; provider?: ProviderClient }) {
  const { config } = deps;
  const provider =
    deps.provider ?? createProviderClient({ baseUrl: config.PROVIDER_API_URL, authToken: config.PROVIDER_AUTH_TOKEN, publicUrl: config.PUBLIC_URL });
  const backoff = providerBackoff(config.OUTBOUND_PROVIDER_RETRY_SECONDS);
  const send: JobHandler<Payload> = (job) => sendThroughProvider(deps, provider, job, backoff);
  const deviceTimeouts: BatchHandler<Payload> = async (jobs) =>
    void (await failUnpickedDeviceSends(deps, distinctIds(jobs, "message_id"), config.OUTBOUND_DEVICE_TIMEOUT_SECONDS));
  const dispatchDeps = { ...deps, deviceTimeoutSeconds: config.OUTBOUND_DEVICE_TIMEOUT_SECONDS };
  // Batches: one transaction for every due scheduled send / every SIM whose pace job is due / every device back online.
  const dispatch: BatchHandler<Payload> = (jobs) => dispatchScheduled(dispatchDeps, distinctIds(jobs, "message_id"));
  const pace: BatchHandler<{ hosted_sim_id: number }> = (jobs) => paceSims(dispatchDeps, distinctIds(jobs, "hosted_sim_id"));
  const devicesOnline: BatchHandler<{ device_id: number }> = (jobs) => resumeDevices(dispatchDeps, distinctIds(jobs, "device_id"));
  return { send, backoff, deviceTimeouts, dispatch, pace, devicesOnline };
}
