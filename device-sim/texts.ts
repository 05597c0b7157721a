import { fakeWith, phoneNumber, type Random } from "./random";

// Alphanumeric senders (at most 11 characters, as carriers allow) and short codes, beside people.
const BRANDS = ["Google", "WhatsApp", "DHL", "Amazon", "Uber", "PayPal", "Revolut", "Telegram", "Bank", "Vodafone"];

/** Who an SMS is from: mostly people, often services sending codes (SPEC.md: up to 20 characters). */
export function randomSender(rng: Random): string {
  const r = rng.next();
  if (r < 0.55) return phoneNumber(rng);
  if (r < 0.9) return rng.pick(BRANDS);
  return String(rng.int(10000, 99999));
}

/** What it says: one-time codes, deliveries, chat, now and then a long multi-part text. */
export function randomText(rng: Random): string {
  return fakeWith(rng, (f) => {
    const r = f.number.float();
    if (r < 0.35) return `Your verification code is ${f.string.numeric(6)}. Do not share it with anyone.`;
    if (r < 0.5)
      return `Your parcel ${f.string.alphanumeric(10).toUpperCase()} will arrive ${f.date.weekday()} between ${f.number.int({ min: 8, max: 12 })}:00 and ${f.number.int({ min: 13, max: 18 })}:00.`;
    if (r < 0.9) return f.lorem.sentence({ min: 3, max: 18 });
    return f.lorem.paragraphs(3).slice(0, 1600);
  });
}
