import { describe, expect, test } from "bun:test";
import { singleFlight } from "../../server/lib/single-flight";

/** A pass that waits until the test lets it finish, recording each start. */
function gated() {
  const starts: (string | undefined)[] = [];
  const gates: (() => void)[] = [];
  let more: boolean[] = [];
  const pass = async (arg: string | undefined) => {
    starts.push(arg);
    await new Promise<void>((resolve) => gates.push(resolve));
    return more.shift() ?? false;
  };
  /** Lets the oldest waiting pass end, then lets the loop take its next step. */
  const release = async () => {
    gates.shift()!();
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { starts, pass, release, setMore: (m: boolean[]) => (more = m) };
}

describe("singleFlight", () => {
  test("calls during a pass fold into one more pass, and every caller's promise settles after it", async () => {
    const g = gated();
    let idle = 0;
    const f = singleFlight(g.pass, { idle: () => idle++ });
    let settled = 0;
    const first = f.run("a").then(() => settled++);
    const second = f.run("b").then(() => settled++);
    const third = f.run("c").then(() => settled++);
    expect(g.starts).toEqual(["a"]);
    await g.release();
    // One more pass for the two calls made meanwhile, without their argument.
    expect(g.starts).toEqual(["a", undefined]);
    expect(settled).toBe(0);
    expect(f.current).toBeDefined();
    await g.release();
    await Promise.all([first, second, third]);
    expect(settled).toBe(3);
    expect(g.starts).toHaveLength(2);
    expect(idle).toBe(1);
    expect(f.current).toBeUndefined();
  });

  test("a pass that says there is more runs again; the next run starts afresh with its argument", async () => {
    const g = gated();
    const f = singleFlight(g.pass);
    g.setMore([true, true, false]);
    const done = f.run("x");
    await g.release();
    await g.release();
    await g.release();
    await done;
    expect(g.starts).toEqual(["x", undefined, undefined]);
    const next = f.run("y");
    expect(g.starts).toEqual(["x", undefined, undefined, "y"]);
    await g.release();
    await next;
  });

  test("a call from inside the pass, before its first await, asks for another pass", async () => {
    let passes = 0;
    const f = singleFlight(async () => {
      passes++;
      if (passes === 1) void f.run();
      await Promise.resolve();
    });
    await f.run();
    expect(passes).toBe(2);
  });

  test("a pass that throws ends the run: its callers see the error, idle still runs, and the next run is a new one", async () => {
    let idle = 0;
    let calls = 0;
    const f = singleFlight(
      async () => {
        calls++;
        await Promise.resolve();
        if (calls === 1) throw new Error("database away");
      },
      { idle: () => idle++ },
    );
    const a = f.run();
    const b = f.run();
    await expect(a).rejects.toThrow("database away");
    await expect(b).rejects.toThrow("database away");
    expect(calls).toBe(1);
    expect(idle).toBe(1);
    expect(f.current).toBeUndefined();
    await f.run();
    expect(calls).toBe(2);
    expect(idle).toBe(2);
  });

  test("a pass that throws before its first await ends the run and leaves nothing under way", async () => {
    let calls = 0;
    const f = singleFlight((() => {
      calls++;
      if (calls === 1) throw new Error("at once");
      return Promise.resolve(false);
    }) as unknown as () => Promise<boolean>);
    await expect(f.run()).rejects.toThrow("at once");
    expect(f.current).toBeUndefined();
    await f.run();
    expect(calls).toBe(2);
  });
});
