import { rmSync } from "node:fs";

/**
 * Data folders a test process made (an embedded database each, tens of MB): removed after its
 * last test (test/setup.ts). Not on process "exit": bun test does not emit it.
 */
export const temporaryFolders = new Set<string>();

export function removeTemporaryFolders() {
  for (const dir of temporaryFolders) rmSync(dir, { recursive: true, force: true });
  temporaryFolders.clear();
}
