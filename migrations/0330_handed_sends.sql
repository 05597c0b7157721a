-- Device sends handed to their phone (message.send) and not yet taken up by it (still `queued`):
-- when the phone stops serving the number (revoked, its card left service, the card proved
-- another number), messages/pacer.ts `reconsiderSends` fails them at once by this index, instead
-- of leaving them to the pick-up timeout. Few rows at any time: a send leaves it when the phone
-- reports on it.
create index messages_handed_sim_idx on messages (hosted_sim_id)
  where direction = 'outbound' and status = 'queued' and device_id is not null and dispatched_at is not null;
