import { Elysia } from "elysia";
import { apiKeyRoutes } from "./api-keys/routes";
import { authRoutes } from "./auth/routes";
import { authRoutesV2 } from "./auth/routes-v2";
import { deviceRoutes } from "./devices/routes";
import { deviceRoutesV2 } from "./devices/routes-v2";
import { eventRoutes } from "./events/routes";
import { nextMessageRoutes } from "./messages/next-routes";
import { policyRoutes } from "./messages/policy-routes";
import { messageRoutes } from "./messages/routes";
import { numberRoutes } from "./numbers/routes";
import { oauthRoutes } from "./oauth/routes";
import { providerRoutes } from "./provider/routes";
import { realtimeRoutes } from "./realtime/routes";
import type { Services } from "./services";
import { teamRoutes } from "./teams/routes";
import { usageRoutes } from "./usage/routes";
import { webhookRoutes } from "./webhooks/routes";

/** Every feature's routes, mounted under the app. One line per feature. */
export function featureRoutes(services: Services) {
  return new Elysia()
    .use(authRoutes(services))
    .use(realtimeRoutes(services))
    .use(apiKeyRoutes(services))
    .use(teamRoutes(services))
    .use(numberRoutes(services))
    .use(messageRoutes(services))
    .use(policyRoutes(services))
    .use(nextMessageRoutes(services))
    .use(eventRoutes(services))
    .use(oauthRoutes(services))
    .use(deviceRoutes(services))
    .use(providerRoutes(services))
    .use(webhookRoutes(services))
    .use(usageRoutes(services));
}

/**
 * Routes of API v2 that differ from v1. Every other /api/v2 path is answered by the current
 * route (server/app.ts `unversioned`), so v2 holds only what changed, on the same stores.
 */
export function v2Routes(services: Services) {
  return new Elysia().use(authRoutesV2(services)).use(deviceRoutesV2(services));
}
