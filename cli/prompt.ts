import { createInterface } from "node:readline";
import { CliError } from "./output";

let pipedLines: AsyncIterator<string> | undefined;

/** Without a terminal, answers come one per line from standard input (for scripts). */
async function readPipedLine(what: string): Promise<string> {
  pipedLines ??= createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const next = await pipedLines.next();
  if (next.done) throw new CliError(`No ${what} given: pass it as an option or on standard input.`);
  return next.value.trim();
}

/** Asks on stderr (stdout stays clean for --json); `hidden` does not echo what is typed. */
export async function ask(question: string, opts: { hidden?: boolean; what: string }): Promise<string> {
  if (!process.stdin.isTTY) return readPipedLine(opts.what);
  process.stderr.write(question);
  if (!opts.hidden) {
    const rl = createInterface({ input: process.stdin, terminal: false });
    const line = await new Promise<string>((resolve) => rl.once("line", resolve));
    rl.close();
    return line.trim();
  }
  return new Promise((resolve) => {
    let typed = "";
    process.stdin.setRawMode(true);
    process.stdin.resume();
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString("utf8")) {
        if (ch === "\u0003") {
          process.stderr.write("\n");
          process.exit(130);
        }
        if (ch === "\r" || ch === "\n") {
          process.stdin.setRawMode(false);
          process.stdin.pause();
          process.stdin.off("data", onData);
          process.stderr.write("\n");
          resolve(typed);
          return;
        }
        typed = ch === "\u007f" || ch === "\b" ? typed.slice(0, -1) : typed + ch;
      }
    };
    process.stdin.on("data", onData);
  });
}
