// Preloaded by bun test (bunfig.toml): quiet logs unless asked for.
process.env.LOG_LEVEL ??= "silent";
