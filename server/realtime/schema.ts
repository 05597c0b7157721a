import { type Static, Type } from "@sinclair/typebox";
import { Text } from "../lib/fields";
import { SOCKET_ID_PATTERN } from "./protocol";

export const ConnectionDetails = Type.Object({
  broadcaster: Type.Literal("pusher"),
  key: Type.String({ description: "Public application key" }),
  ws_url: Type.String({ description: "WebSocket URL of the broadcaster, ready to connect" }),
  ws_host: Type.String(),
  ws_port: Type.Integer(),
  ws_scheme: Type.Union([Type.Literal("ws"), Type.Literal("wss")]),
  force_tls: Type.Boolean(),
  auth_method: Type.Literal("bearer_token"),
  auth_header: Type.String({ description: "Header to send to auth_endpoint" }),
  auth_endpoint: Type.String({ description: "Channel authorization endpoint (path on the API)" }),
});
export type ConnectionDetails = Static<typeof ConnectionDetails>;

/** pusher-js posts these form-encoded; JSON is accepted too. */
export const ChannelAuthRequest = Type.Object({
  socket_id: Type.String({ pattern: SOCKET_ID_PATTERN, maxLength: 41, description: "socket_id from pusher:connection_established" }),
  channel_name: Text({
    minLength: 1,
    maxLength: 164,
    description: "private-organization.{id}, private-team.{id}, private-number.{id} or private-device.{id}",
  }),
});
export type ChannelAuthRequest = Static<typeof ChannelAuthRequest>;

export const ChannelAuthResponse = Type.Object({
  auth: Type.String({ description: "<key>:<hex HMAC-SHA256(secret, socket_id:channel_name)>" }),
});
