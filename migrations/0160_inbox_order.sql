-- GET /api/inbox: an organization's messages over every number, newest (highest id) first, in
-- keyset pages (`before` a message id); without this index each page would sort the whole view.
create index message_visibility_org_message_idx on message_visibility (organization_id, message_id);
