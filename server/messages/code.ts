import {
  CLAUSE_BREAK,
  CURRENCY_BEFORE,
  IDENTIFIER_NOUN,
  KEYWORD,
  NOT_CODE_PREFIX,
  NOT_OTP_AFTER,
  NOT_OTP_BEFORE,
  NUMERIC_DOMAIN,
  PROMO,
  SPENT,
  UNIT_AFTER,
} from "./code-words";

/**
 * The one-time code an SMS carries, or null (docs/api-notes.md "One-time codes in messages").
 * Pure: no I/O, no clock. Precision first: a code is returned only when a code keyword (code,
 * código, код, 验证码, 인증번호, رمز, कोड, kod, OTP, PIN, TAN ...) stands in the same clause as it;
 * a candidate the keyword introduces ("code is 482913", "Code: 482913", "482913 is your code")
 * wins over one it merely comes near ("code for transaction 99887766 is 482913"); then the
 * closest, and null when two different candidates are equally close. A candidate whose sentence
 * says it is spent ("was already used", "has expired") is never taken, so the new code of "Your
 * code 4412 has expired. Your new code is 482913." is; nor is the number of an identifier's
 * "code" ("Store code: 0042", "merchant code 5411"), which is no keyword either. Digit codes come
 * back without their separators ("123 456", "123-456" → "123456"); letter-prefixed and
 * alphanumeric codes as shown ("G-123456", "AB12CD"). Linear in the text's length: each candidate
 * looks only at the keywords within MAX_GAP of it, and each sentence is judged spent once.
 */
export function extractCode(text: string): string | null {
  const t = maskLinks(asciiDigits(text));
  const { keywords, identified } = findKeywords(t);
  if (keywords.length === 0) return null;
  const candidates = [...digitCandidates(t), ...prefixedCandidates(t), ...(PROMO.test(t) ? [] : alphanumericCandidates(t))];
  const spent = spentSentences(t);
  let best: { c: Candidate; rank: Rank } | null = null;
  let tied = false;
  for (const c of candidates) {
    const rank = nearestKeyword(t, c, keywords);
    if (rank === null || identified.has(c.start) || spent(c.start)) continue;
    const order = best === null ? -1 : compareRanks(rank, best.rank);
    if (order < 0) {
      best = { c, rank };
      tied = false;
    } else if (order === 0 && c.code !== best!.c.code) tied = true;
  }
  return best && !tied ? best.c.code : null;
}

/** How a candidate stands to its closest keyword: introduced by it (`linked`), and how far. */
type Rank = { linked: boolean; gap: number };
const compareRanks = (a: Rank, b: Rank) => (a.linked !== b.linked ? (a.linked ? -1 : 1) : a.gap - b.gap);

/**
 * Whether the sentence holding a position says its code is spent, each sentence tested once:
 * sentences end at ". ", "! ", "? ", "。", "！", "？" or a line break.
 */
function spentSentences(t: string): (at: number) => boolean {
  const ends: number[] = [];
  for (const m of t.matchAll(/[.!?]\s|[。！？\n]/g)) ends.push(m.index);
  const verdicts = new Map<number, boolean>();
  return (at) => {
    // The first sentence end at or after `at`: its sentence runs from the end before it.
    const lo = firstNotBelow(ends.length, (i) => ends[i]! < at);
    let verdict = verdicts.get(lo);
    if (verdict === undefined) {
      verdict = SPENT.test(t.slice(lo === 0 ? 0 : ends[lo - 1]! + 1, ends[lo] ?? t.length));
      verdicts.set(lo, verdict);
    }
    return verdict;
  };
}

/** Binary search over 0..n-1 ordered so that `below` holds for a prefix: the first index past that prefix (n when it is all). */
function firstNotBelow(n: number, below: (i: number) => boolean): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (below(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

type Span = { start: number; end: number };
type Candidate = Span & { code: string; kind: "digits" | "prefixed" | "alphanumeric" };

/** Longest gap between a keyword and its code ("Ihre mTAN für die Überweisung über 250,00 EUR an DE89 ... lautet 482913"). */
const MAX_GAP = 80;
/** An alphanumeric candidate must follow its keyword closely ("code is: F4K9P"): plates and references do not. */
const MAX_ALPHANUMERIC_GAP = 12;

const DIGIT_BLOCKS: [number, number][] = [
  [0x0660, 0x0669], // Arabic-Indic
  [0x06f0, 0x06f9], // Extended Arabic-Indic (Persian, Urdu)
  [0x0966, 0x096f], // Devanagari
  [0xff10, 0xff19], // full-width
];

const NATIVE_DIGIT = new RegExp(`[${DIGIT_BLOCKS.map(([lo, hi]) => `\\u{${lo.toString(16)}}-\\u{${hi.toString(16)}}`).join("")}]`, "gu");

/** Native digits as ASCII, one character for one, so positions stay those of the text. */
function asciiDigits(text: string): string {
  return text.replace(NATIVE_DIGIT, (ch) => {
    const cp = ch.codePointAt(0)!;
    return String(cp - DIGIT_BLOCKS.find(([lo, hi]) => cp >= lo && cp <= hi)![0]);
  });
}

/**
 * Links, domains and addresses blanked out: their digits are paths and ids, never the code to type.
 * Each pattern starts only where no earlier start of the same run could match (a word's start; a
 * domain's first label, not one after its hyphen or dot), which finds the same spans as trying
 * every position would, in time linear in the text: tried at every position, a 1,600-character
 * body of one long word took 2-4 ms (docs/benchmarks.md), against 7-8 µs for an ordinary SMS.
 */
export function maskLinks(text: string): string {
  const blank = (m: string) => " ".repeat(m.length);
  return text
    .replace(/\bhttps?:\/\/\S+/gi, blank)
    .replace(/(?<!\S)[^\s@]*@\S+/g, blank)
    .replace(/(?<![\p{L}\p{N}-]|[\p{L}\p{N}-]\.)(?:[\p{L}\p{N}-]+\.)+[a-z]{2,}(?:\/\S*)?/giu, (m) => (isNumberThenWord(m) ? m : blank(m)));
}

/**
 * "482913.Valid", "OTP:482913.Do not share": a number, a dot and the next sentence's first word,
 * not a domain. A name of digits only is a domain with a path or with a TLD such names have
 * ("12306.cn", "163.com"), written in lower case: "Do", "It", "No" are TLDs too.
 */
const isNumberThenWord = (m: string) => /^(?:\d+\.)+[^./]+$/.test(m) && !NUMERIC_DOMAIN.test(m);

/**
 * The code keywords, and where the number an identifier's "code" names starts ("Store code: 0042",
 * "merchant code 5411"): such a number is no candidate, however near a real keyword it stands.
 */
function findKeywords(t: string): { keywords: Span[]; identified: Set<number> } {
  const keywords: Span[] = [];
  const identified = new Set<number>();
  for (const m of t.matchAll(KEYWORD)) {
    const start = m.index;
    const end = start + m[0].length;
    if (NOT_OTP_BEFORE.test(t.slice(Math.max(0, start - 16), start)) || NOT_OTP_AFTER.test(t.slice(end, end + 24))) continue;
    if (/^code$/i.test(m[0]) && namesIdentifier(t, start)) {
      identified.add(end + /^\s*[:：.#]?\s*/.exec(t.slice(end, end + 8))![0].length);
      continue;
    }
    keywords.push({ start, end });
  }
  return { keywords, identified };
}

/**
 * Whether the "code" at `at` is an identifier's: the whole word before it, past at most three
 * spaces or hyphens, is an IDENTIFIER_NOUN ("Store code", "merchant-code", "customer's code").
 * Walked back a character at a time: a pattern anchored at `at` is tried from every position
 * before it, and this runs for every keyword.
 */
function namesIdentifier(t: string, at: number): boolean {
  let end = at;
  while (end > 0 && at - end < 3 && isSpaceOrHyphen(t.charCodeAt(end - 1))) end--;
  let start = end;
  while (start > 0 && end - start < 16 && isAsciiLetterOrApostrophe(t.charCodeAt(start - 1))) start--;
  if (start === end || (start > 0 && /[\p{L}\p{N}]/u.test(t[start - 1]!))) return false;
  return IDENTIFIER_NOUN.test(t.slice(start, end));
}

const isSpaceOrHyphen = (c: number) => c === 32 || c === 45 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x202f || (c >= 0x2000 && c <= 0x200a);
const isAsciiLetterOrApostrophe = (c: number) => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 39;

const LETTER = /[\p{Script=Latin}\p{Script=Cyrillic}\p{Script=Greek}_]/u;

/**
 * Numbers of one or two groups (4 to 8 digits: "482913", "482 913", "482-913", "7732 19"); the
 * groups may also be parted by a no-break, narrow no-break or thin space (French "482 913"). A
 * number with a decimal point, a colon or a slash is an amount, a time or a date; one of three
 * or more groups a phone, an IBAN or a tracking number.
 */
function digitCandidates(t: string): Candidate[] {
  const out: Candidate[] = [];
  for (const m of t.matchAll(/\d+(?:[ \u00a0\u202f\u2009\-.,:/]\d+)*/g)) {
    const raw = m[0];
    if (/[.,:/]/.test(raw)) continue;
    // What is left between the digits is a group separator of the match above.
    const groups = raw.split(/\D/);
    const digits = groups.join("");
    if (digits.length < 4 || digits.length > 8 || groups.length > 2) continue;
    if (groups.length === 2 && (groups[0]!.length < 3 || groups[1]!.length < 2)) continue;
    const span = { start: m.index, end: m.index + raw.length };
    if (!standsAlone(t, span)) continue;
    out.push({ ...span, code: digits, kind: "digits" });
  }
  return out;
}

/** "G-482913", "FB-48291": the prefix is part of what the sender shows. */
function prefixedCandidates(t: string): Candidate[] {
  const out: Candidate[] = [];
  for (const m of t.matchAll(/(?<![\p{L}\p{N}_-])[A-Z]{1,3}-\d{4,8}(?![\p{L}\p{N}_]|[-.,:/]\d)/gu)) {
    out.push({ start: m.index, end: m.index + m[0].length, code: m[0], kind: "prefixed" });
  }
  return out;
}

/** Upper-case letters and digits mixed, 4 to 8 of them ("AB12CD", "F4K9P"). */
function alphanumericCandidates(t: string): Candidate[] {
  const out: Candidate[] = [];
  for (const m of t.matchAll(/(?<![\p{L}\p{N}_-])[A-Z0-9]{4,8}(?![\p{L}\p{N}_]|-[\p{L}\p{N}])/gu)) {
    if (!/[A-Z]/.test(m[0]) || !/\d/.test(m[0])) continue;
    out.push({ start: m.index, end: m.index + m[0].length, code: m[0], kind: "alphanumeric" });
  }
  return out;
}

/** Not glued to letters or symbols, not an amount, not an order/account/phone number. */
function standsAlone(t: string, { start, end }: Span): boolean {
  const before = t.slice(Math.max(0, start - 24), start);
  const prev = before.at(-1) ?? "";
  const next = t[end] ?? "";
  if (LETTER.test(prev) || /[#+*№@%/\\&=~.\-$€£¥₹₽₩]/.test(prev)) return false;
  if (LETTER.test(next) || /^-[\p{L}\p{N}]/u.test(t.slice(end, end + 2))) return false;
  if (CURRENCY_BEFORE.test(before) || UNIT_AFTER.test(t.slice(end, end + 8))) return false;
  return !NOT_CODE_PREFIX.test(before);
}

/**
 * The words that introduce a code: after the keyword, right before the code ("code is", "Code:",
 * "mTAN ... lautet", "验证码为", "番号は"); before the keyword, right after the code ("482913 is
 * your code"). A keyword right next to its code introduces it too ("code 482913", "482913 code").
 */
const LINK_BEFORE_CODE = /(?:[:：=]|(?<![\p{L}])(?:is|are|lautet|ist|est|es|é|è|wynosi|je|är|er|это)|[是为為は은는])\s*$/iu;
const LINK_AFTER_CODE = /^\s*(?:(?:is|are|ist|est|es|é|è|je|är|er|это)(?![\p{L}])|[是为為は은는])/iu;

/**
 * The closest keyword of the candidate's clause, and whether it introduces the candidate; null
 * when none is close enough. Keywords are in text order, and only those within the gap limit of
 * the candidate are looked at (the first by binary search), so a text of many keywords and
 * numbers costs its length, not the product of their counts.
 */
function nearestKeyword(t: string, c: Candidate, keywords: Span[]): Rank | null {
  const limit = c.kind === "alphanumeric" ? MAX_ALPHANUMERIC_GAP : MAX_GAP;
  const lo = firstNotBelow(keywords.length, (i) => keywords[i]!.end < c.start - limit);
  let best: Rank | null = null;
  for (let i = lo; i < keywords.length && keywords[i]!.start <= c.end + limit; i++) {
    const k = keywords[i]!;
    const after = k.end <= c.start;
    if (!after && k.start < c.end) continue;
    if (c.kind === "alphanumeric" && !after) continue;
    if ((after ? c.start - k.end : k.start - c.end) > limit) continue;
    const between = after ? t.slice(k.end, c.start) : t.slice(c.end, k.start);
    if (CLAUSE_BREAK.test(between)) continue;
    const linked = /^[\s"'«»“”-]*$/.test(between) || (after ? LINK_BEFORE_CODE : LINK_AFTER_CODE).test(between);
    const rank = { linked, gap: between.length };
    if (best === null || compareRanks(rank, best) < 0) best = rank;
  }
  return best;
}
