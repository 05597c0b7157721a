import { Type } from "@sinclair/typebox";
/** API.md §1, for the error answers a route adds to the OpenAPI document. */
export const ErrorBody = Type.Object({
  message: Type.String(),
  code: Type.String(),
  errors: Type.Optional(Type.Record(Type.String(), Type.Array(Type.String()))),
});

/** The one error type of the server. Everything a client sees as non-2xx is rendered from it (API.md §1). */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: { errors?: Record<string, string[]>; headers?: Record<string, string>; [key: string]: unknown } = {},
  ) {
    super(message);
  }
}

export const notFound = (what = "Resource") => new AppError(404, "not_found", `${what} not found.`);
export const unauthenticated = () => new AppError(401, "unauthenticated", "Authentication required: send a valid Bearer token.");
export const permissionDenied = (message = "You do not have permission to perform this action.") => new AppError(403, "permission_denied", message);
export const invalidState = (message: string) => new AppError(409, "invalid_state", message);
export const validationFailed = (errors: Record<string, string[]>, message?: string) =>
  new AppError(422, "validation_failed", message ?? firstMessage(errors), { errors });
export const unavailable = () => new AppError(503, "unavailable", "The service is temporarily unavailable; try again shortly.");

function firstMessage(errors: Record<string, string[]>): string {
  const [field, messages] = Object.entries(errors)[0] ?? ["request", ["is invalid"]];
  const extra = Object.keys(errors).length - 1;
  return `The ${field} field ${messages[0]}.${extra > 0 ? ` (and ${extra} more error${extra > 1 ? "s" : ""})` : ""}`;
}

/** Renders an AppError as the body and headers of API.md §1. */
export function errorResponse(error: AppError, requestId?: string): Response {
  const { errors, headers, ...rest } = error.extra;
  const body: Record<string, unknown> = { message: error.message, code: error.code, ...rest };
  if (errors) body.errors = errors;
  const h: Record<string, string> = { "content-type": "application/json", ...headers };
  if (requestId) h["x-request-id"] = requestId;
  return new Response(JSON.stringify(body), { status: error.status, headers: h });
}
