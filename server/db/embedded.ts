import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketHandler } from "@electric-sql/pglite-socket";

/**
 * PGlite has one backend session. pglite-socket's own queue interleaves the messages of
 * different connections, which breaks the extended protocol (a Parse from one client can
 * land between another's Parse and Bind). This queue gives one connection the backend
 * from its first message until it has sent Sync or Query outside a transaction, so each
 * connection sees a whole session, as on a real server (transactions are serialised).
 */
function createSessionQueue(db: PGlite) {
  type Entry = {
    handlerId: number;
    message: Uint8Array;
    onData: (data: Uint8Array) => void;
    resolve: (n: number) => void;
    reject: (e: unknown) => void;
  };
  let queue: Entry[] = [];
  let owner: number | null = null;
  let running = false;

  async function pump() {
    if (running) return;
    running = true;
    try {
      while (queue.length > 0) {
        const index = owner === null ? 0 : queue.findIndex((e) => e.handlerId === owner);
        if (index === -1) break; // the owner is busy in JS; everyone else waits
        const [entry] = queue.splice(index, 1) as [Entry];
        owner = entry.handlerId;
        let bytes = 0;
        try {
          await db.runExclusive(() =>
            db.execProtocolRawStream(entry.message, {
              onRawData: (data) => {
                bytes += data.length;
                entry.onData(data);
              },
            }),
          );
        } catch (error) {
          entry.reject(error);
          continue;
        }
        const type = entry.message[0];
        const endsExchange = type === 0x53 /* Sync */ || type === 0x51 /* Query */ || type === 0x58; /* Terminate */
        if (endsExchange && !db.isInTransaction()) owner = null;
        entry.resolve(bytes);
      }
    } finally {
      running = false;
    }
  }

  return {
    enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void) {
      return new Promise<number>((resolve, reject) => {
        queue.push({ handlerId, message, onData, resolve, reject });
        void pump();
      });
    },
    getQueueLength: () => queue.length,
    clearQueueForHandler(handlerId: number) {
      queue = queue.filter((e) => {
        if (e.handlerId !== handlerId) return true;
        e.reject(new Error("connection closed"));
        return false;
      });
    },
    async clearTransactionIfNeeded(handlerId: number) {
      if (owner !== handlerId) return;
      if (db.isInTransaction()) await db.exec("ROLLBACK");
      owner = null;
      void pump();
    },
  };
}

export type EmbeddedPostgres = { socketDir: string; port: number; stop(): Promise<void> };

export class EmbeddedInUseError extends Error {}

const isRunning = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === "EPERM";
  }
};

/**
 * PGlite's files must never be open in two processes. A lock file holds the owner's pid; a
 * lock whose process is gone is stale and taken over. Others connect to the owner's socket.
 */
function takeLock(dir: string): () => void {
  const lockPath = join(dir, "simhost.pid");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockPath, String(process.pid), { flag: "wx" });
      return () => rmSync(lockPath, { force: true });
    } catch (e) {
      if ((e as { code?: string }).code !== "EEXIST") throw e;
      const owner = Number(readFileSync(lockPath, "utf8"));
      if (owner && owner !== process.pid && isRunning(owner))
        throw new EmbeddedInUseError(`the embedded database in ${dir} is open in process ${owner}; connect to its socket instead`);
      rmSync(lockPath, { force: true });
    }
  }
  throw new EmbeddedInUseError(`could not lock the embedded database in ${dir}`);
}

/** Open (or create) the embedded database in `dir` and serve it on a Unix socket in that folder. */
export async function startEmbeddedPostgres(dir: string): Promise<EmbeddedPostgres> {
  mkdirSync(dir, { recursive: true });
  const unlock = takeLock(dir);
  let db: PGlite;
  try {
    db = await PGlite.create(join(dir, "data"));
  } catch (e) {
    unlock();
    throw e;
  }
  const queue = createSessionQueue(db);
  const port = 5432;
  const socketPath = join(dir, `.s.PGSQL.${port}`);
  rmSync(socketPath, { force: true });
  const handlers = new Set<PGLiteSocketHandler>();
  const server: Server = createServer((socket) => {
    // The handler only needs the queue's public surface.
    const handler = new PGLiteSocketHandler({ queryQueue: queue as never, closeOnDetach: true });
    handlers.add(handler);
    handler.addEventListener("close", () => handlers.delete(handler));
    handler.addEventListener("error", () => handlers.delete(handler));
    handler.attach(socket).catch(() => socket.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, resolve);
  });
  return {
    socketDir: dir,
    port,
    async stop() {
      for (const handler of handlers) await handler.detach(true);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(socketPath, { force: true });
      await db.close();
      unlock();
    },
  };
}
