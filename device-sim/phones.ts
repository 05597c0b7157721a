import { fakeWith, phoneNumber, type Random } from "./random";
import type { Registration } from "./verify";

const MODELS = ["Pixel 8", "Pixel 7a", "Galaxy S23", "Galaxy A54", "Moto G84", "Redmi Note 13", "OnePlus 12", "Nokia G42"];

/** The phone that simulated device `index` of a seeded run is: the same seed gives the same phones. */
export function deviceRegistration(rng: Random, index: number): Registration {
  const dual = rng.chance(0.25);
  const sim_slots = dual ? [1, 2] : [1];
  return {
    android_id: rng.hex(16),
    sim_slots,
    numbers: sim_slots.map(() => phoneNumber(rng)),
    device_model: rng.pick(MODELS),
    app_version: `2.${rng.int(0, 9)}.${rng.int(0, 20)}`,
    device_name: fakeWith(rng, (f) => `${f.person.firstName()}'s phone ${index + 1}`),
  };
}
