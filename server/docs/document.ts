import { swagger } from "@elysiajs/swagger";
import { REFERENCE_SCRIPT } from "./routes";

const DESCRIPTION = `Hosted SIM messaging: numbers, BYOS devices, messages, webhooks.

**Authentication.** \`Authorization: Bearer <token>\` with a session token (from login), an OAuth
access token, or an API key (\`sk_...\`); operations that take session tokens only answer an API key
403 \`api_key_not_allowed\`. \`X-Organization-Id\` picks the organization to act in.

**Errors.** Every answer that is not 2xx has a JSON body of this shape, and no other:

\`\`\`json
{ "message": "Human-readable sentence.", "code": "machine_code", "errors": { "field": ["why"] } }
\`\`\`

- \`message\`: a sentence meant for people; it may change, so do not parse it.
- \`code\`: a stable machine-readable code, such as \`validation_failed\`, \`unauthenticated\`,
  \`permission_denied\`, \`not_found\`, \`rate_limited\` or \`unavailable\`.
- \`errors\`: only on \`validation_failed\` (422): one entry per offending field, with dotted
  paths for nested fields (\`sim_cards.0.signal_strength\`), each a list of reasons.

Some codes add a field of their own: \`number_locked\` adds \`locked_until\`, and
\`device_already_registered\` adds \`device_id\`. A 429 carries a \`Retry-After\` header.`;

/**
 * The OpenAPI document at /openapi.json (the v1 API; later versions' own routes are documented
 * separately). The plugin's own reference page would load its script from a CDN: its /docs is
 * replaced by ./routes.ts, registered after it, and is pointed at the local script as well.
 */
export const openApiDocument = () =>
  swagger({
    path: "/docs",
    specPath: "/openapi.json",
    scalarCDN: REFERENCE_SCRIPT,
    exclude: ["/docs", "/openapi.json", /^\/api\/v\d+\//, /^\/docs\//],
    documentation: {
      info: { title: "simhost API", version: "1.0.0", description: DESCRIPTION },
      components: {
        securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "Session token, OAuth access token or API key (sk_...)" } },
        schemas: {
          Error: {
            type: "object",
            required: ["message", "code"],
            properties: {
              message: { type: "string" },
              code: { type: "string" },
              errors: { type: "object", additionalProperties: { type: "array", items: { type: "string" } } },
            },
          },
        },
      },
      security: [{ bearer: [] }],
    },
  });
