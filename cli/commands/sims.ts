import type { Command } from "commander";
import { createApiClient } from "../api-client";
import { globals, orgOption, positiveInt } from "../args";
import { emit } from "../output";

export function registerSims(program: Command): void {
  const sims = program.command("sims").description("SIM cards of BYOS devices");

  orgOption(sims.command("reissue"))
    .description("issue a new verification code for a pending or inactive SIM card")
    .argument("<device-id>", "device id", positiveInt)
    .argument("<sim-id>", "SIM card id", positiveInt)
    .action(async (device: number, sim: number, _opts, cmd: Command) => {
      const o = globals(cmd);
      const api = createApiClient(o);
      const body = await api.ok(api.POST("/api/byos/devices/{device}/sims/{simCard}/reissue-code", { params: { path: { device, simCard: sim } } }));
      const c = body.data;
      emit(
        o,
        body,
        () =>
          `SIM ${c.id} (slot ${c.sim_slot}): send ${c.verification_code} by SMS to ${c.provider_number}${c.code_expires_at ? ` before ${c.code_expires_at}` : ""}.`,
      );
    });
}
