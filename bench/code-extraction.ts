/**
 * One-time code extraction (server/messages/code.ts `extractCode`, run on every stored message)
 * per text: the labelled SMS of test/data (ordinary messages, the same run's baseline) against
 * bodies of the longest length an SMS may have (1,600 characters) built to be slow: one long word
 * before an address or a dot, a dotted or hyphenated run, a code keyword and a number repeated.
 * Its masks of links and addresses once tried a match at every position, quadratic in a long
 * word: 2-4 ms for such a body against 7-12 µs for an ordinary SMS (docs/benchmarks.md, session
 * of 2026-11-28 05:16). Best of `--rounds` rounds of `--repeat` passes each; no I/O.
 *
 *   bun bench/code-extraction.ts [--rounds 3] [--repeat 20]
 *
 * Prints a line per text kind, then one JSON object.
 */
import { extractCode } from "../server/messages/code";
import { arg, load } from "./devices-load";

const ROUNDS = arg("rounds", 3);
const REPEAT = arg("repeat", 20);

const labelled = async (name: string) =>
  (await Bun.file(new URL(`../test/data/${name}`, import.meta.url)).text())
    .trim()
    .split("\n")
    .map((line) => (JSON.parse(line) as { text: string }).text);
const ordinary = [...(await labelled("otp-corpus.jsonl")), ...(await labelled("otp-holdout.jsonl"))];
const longest: Record<string, string> = {
  "one long word, then an address": `code 123456 ${"a".repeat(1580)} x@`,
  "one long word, then a dot": `code 123456 ${"a".repeat(1580)}.`,
  "a dotted run": `code 123456 ${"a.".repeat(794)}`,
  "a hyphenated run": `code ${"1-".repeat(795)}.com`,
  "a keyword and a number, repeated": "code 123456 ".repeat(133),
};

/** Best µs per text over the rounds. */
function usPerText(texts: string[]): number {
  for (const t of texts) extractCode(t);
  let best = Number.POSITIVE_INFINITY;
  for (let r = 0; r < ROUNDS; r++) {
    const start = performance.now();
    for (let k = 0; k < REPEAT; k++) for (const t of texts) extractCode(t);
    best = Math.min(best, ((performance.now() - start) * 1000) / (REPEAT * texts.length));
  }
  return +best.toFixed(2);
}

const loadBefore = load();
const ordinaryUs = usPerText(ordinary);
console.log(`ordinary SMS (${ordinary.length} labelled texts): ${ordinaryUs} µs a text`);
const bodies = Object.entries(longest).map(([kind, text]) => {
  const us = usPerText([text]);
  console.log(`${text.length}-character body, ${kind}: ${us} µs`);
  return { kind, characters: text.length, us };
});
const worst = bodies.reduce((a, b) => (b.us > a.us ? b : a));
console.log(
  JSON.stringify(
    {
      ordinaryTexts: ordinary.length,
      ordinaryUs,
      bodies,
      worst,
      worstToOrdinary: +(worst.us / ordinaryUs).toFixed(1),
      loadavgBefore: loadBefore,
      loadavgAfter: load(),
    },
    null,
    2,
  ),
);
