import pino from "pino";

export type Logger = pino.Logger;

/** Structured JSON logs. Secrets are redacted wherever they could appear in a logged object. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [
          "password",
          "token",
          "secret",
          "authorization",
          "*.password",
          "*.token",
          "*.secret",
          "*.authorization",
          "headers.authorization",
          "plain_text_key",
          "tmp_token",
        ],
        censor: "[redacted]",
      },
    },
    destination,
  );
}
