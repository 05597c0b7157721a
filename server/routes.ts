import { Elysia } from "elysia";
import type { Services } from "./services";

/** Every feature's routes, mounted under the app. */
export function featureRoutes(_services: Services) {
  return new Elysia();
}
