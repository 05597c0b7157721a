// Preloaded by bun test (bunfig.toml): quiet logs unless asked for.
import { afterAll } from "bun:test";
import { removeTemporaryFolders } from "./temporary-folders";

process.env.LOG_LEVEL ??= "silent";

// A preloaded afterAll runs once, after the last test of every file.
afterAll(removeTemporaryFolders);
