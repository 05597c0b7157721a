import { Elysia } from "elysia";
import { authRoutes } from "./auth/routes";
import { deviceRoutes } from "./devices/routes";
import { providerRoutes } from "./provider/routes";
import type { Services } from "./services";

/** Every feature's routes, mounted under the app. One line per feature. */
export function featureRoutes(services: Services) {
  return new Elysia().use(authRoutes(services)).use(deviceRoutes(services)).use(providerRoutes(services));
}
