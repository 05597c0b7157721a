import { randomString } from "../lib/crypto";
import type { Message } from "../messages/store";

/** The id of one event to one integration; it is also the Standard Webhooks `webhook-id`. */
export const newEventId = () => `evt_${randomString(24)}`;

export type EventBody = { id: string; type: "message.received" | "webhook.test"; created_at: string; data: unknown };

export type MessageReceivedData = Message & {
  hosted_sim: { id: number | null; number: string; alias: string | null };
  team: { id: number; name: string } | null;
};

/**
 * `message.received`: the message object with the number (and this organization's alias) and the
 * message's one team in this organization: `team_id` and `team` always name the same team
 * (docs/events.md "A message's team").
 */
export function messageReceivedEvent(
  id: string,
  createdAt: string,
  message: Message,
  target: { team_id: number | null; team_name: string | null; alias: string | null },
): EventBody {
  const data: MessageReceivedData = {
    ...message,
    team_id: target.team_id,
    hosted_sim: { id: message.hosted_sim_id, number: message.number, alias: target.alias },
    // A team deleted since the message arrived has no name left to show: null, as for no team.
    team: target.team_id === null || target.team_name === null ? null : { id: target.team_id, name: target.team_name },
  };
  return { id, type: "message.received", created_at: createdAt, data };
}

export function testEvent(id: string, createdAt: string, integration: { id: number; name: string }): EventBody {
  return {
    id,
    type: "webhook.test",
    created_at: createdAt,
    data: { webhook_integration: { id: integration.id, name: integration.name }, message: "This is a test event from simhost." },
  };
}
