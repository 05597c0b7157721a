import { Type } from "@sinclair/typebox";
import { t } from "elysia";
import { Id, IdParam, Optional, Text } from "../lib/fields";

const DateTime = t.String({ format: "date-time" });

export const TeamBody = Type.Object({ name: Text({ minLength: 1, maxLength: 255 }) });

export const AddMemberBody = Type.Object({
  user_id: Optional(Id(), "absent"),
  email: Optional(Type.String({ format: "email", maxLength: 255, description: "an email address" }), "absent"),
});

export const TeamParams = t.Object({ team: IdParam() });
export const MemberParams = t.Object({ team: IdParam(), user: IdParam() });

export const TeamMember = t.Object({
  id: Type.Integer({ description: "the user's id" }),
  name: t.String(),
  email: t.String(),
  role: t.String({ description: "the user's role in the organization: owner, admin or member" }),
  added_at: DateTime,
});

const teamFields = {
  id: Type.Integer(),
  name: t.String(),
  members_count: Type.Integer(),
  created_at: DateTime,
  updated_at: DateTime,
};
export const Team = t.Object(teamFields);
export const TeamWithMembers = t.Object({ ...teamFields, members: t.Array(TeamMember) });

export const TeamList = t.Object({ data: t.Array(Team) });
export const TeamData = t.Object({ data: TeamWithMembers });
export const MemberData = t.Object({ data: TeamMember });
