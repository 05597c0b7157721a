import { describe, expect, test } from "bun:test";
import { plainHttpWarning } from "../../cli/api-client";

// Address classification only: nothing here connects anywhere.
describe("the CLI's warning for credentials over plain http", () => {
  test("plain http to another host warns; https, and http to this machine, do not", () => {
    for (const url of ["http://simhost.example.test", "http://simhost.example.test:3000/", "http://10.1.2.3:3000", "http://[fd00::1]:3000"])
      expect([url, plainHttpWarning(url)]).toEqual([url, expect.stringContaining("plain http")]);
    for (const url of [
      "https://simhost.example.test",
      "http://localhost:3000",
      "http://LOCALHOST:3000",
      "http://api.localhost:3000",
      "http://127.0.0.1:3000",
      "http://127.10.0.5",
      "http://[::1]:3000",
    ])
      expect([url, plainHttpWarning(url)]).toEqual([url, null]);
  });
});
