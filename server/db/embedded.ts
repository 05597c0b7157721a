import { mkdirSync, rmSync } from "node:fs";
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

/** Open (or create) the embedded database in `dir` and serve it on a Unix socket in that folder. */
export async function startEmbeddedPostgres(dir: string): Promise<EmbeddedPostgres> {
  mkdirSync(dir, { recursive: true });
  const db = await PGlite.create(join(dir, "data"));
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
    },
  };
}
