import { expect, test } from "bun:test";
import { MAX_TEXT, planSend } from "../../server/messages/send-request";

const now = Date.parse("2027-01-01T00:00:00Z");
const bulk = (text: string, vars: Record<string, string>[]) => () =>
  planSend({ hosted_sim: 1, text, to: vars.map((v, i) => ({ to: `+1555000${String(i).padStart(4, "0")}`, vars: v })) }, now);
const refusal = (f: () => unknown) => {
  try {
    f();
    return null;
  } catch (e) {
    return (e as { extra?: { errors?: Record<string, string[]> } }).extra?.errors ?? e;
  }
};

test("a filled text is judged by its length in code points, each value counted as often as the text uses it", () => {
  // "Hi " + 2 × v + "!" with v of 798 emoji (one code point, two UTF-16 units each): 3 + 1596 + 1 = 1600.
  const v = "😀".repeat(798);
  const ok = bulk("Hi {{v}}{{ v }}!", [{ v }])();
  expect([...ok.recipients[0]!.text].length).toBe(MAX_TEXT);
  expect(ok.recipients[0]!.text).toBe(`Hi ${v}${v}!`);
  expect(refusal(bulk("Hi {{v}}{{ v }}!", [{ v: `${v}a` }]))).toEqual({ "to.0": [expect.stringContaining("more than 1600 characters")] });
});

test("values as long as a body allows, used hundreds of times: every recipient refused, nothing filled", () => {
  const vars = Array.from({ length: 1000 }, () => ({ a: "x".repeat(990) }));
  const errors = refusal(bulk("{{a}}".repeat(320), vars)) as Record<string, string[]>;
  expect(Object.keys(errors)).toHaveLength(1000);
  expect(errors["to.999"]).toEqual([expect.stringContaining("once its variables are filled in")]);
});

test("a text without variables is sent as written, to every recipient", () => {
  const plan = bulk("Hi {{", [{}, {}])();
  expect(plan.recipients.map((r) => r.text)).toEqual(["Hi {{", "Hi {{"]);
});
