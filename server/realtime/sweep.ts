import type { Socket } from "./connection";
import type { RealtimeLimits } from "./limits";
import { CloseCode, eventFrame } from "./protocol";

/**
 * One pass over an instance's sockets: pings clients that have been silent, closes the ones that
 * did not answer (4201), and closes clients that stopped reading their events (4100, reconnect
 * after a pause). Bun closes a client at once past the backpressure limit, so memory is bounded
 * meanwhile; a client still behind at the next pass did not read the close frame either and is cut.
 */
export function sweepSockets(sockets: Iterable<Socket>, limits: RealtimeLimits, now: number, onSlowClose: () => void) {
  for (const ws of sockets) {
    const d = ws.data;
    if (ws.getBufferedAmount() > limits.slowClientBytes) {
      d.slowSweeps += 1;
      if (d.slowSweeps >= 3) ws.terminate();
      if (d.slowSweeps === 2) {
        onSlowClose();
        ws.close(CloseCode.overCapacity, "Client too slow: events were not read.");
      }
      if (d.slowSweeps >= 2) continue;
    } else d.slowSweeps = 0;
    if (d.pingSentAt && now - d.pingSentAt >= limits.pongTimeoutSeconds * 1000) ws.close(CloseCode.pongNotReceived, "Pong reply not received.");
    else if (!d.pingSentAt && now - d.lastSeen >= limits.idleSeconds * 1000) {
      d.pingSentAt = now;
      ws.send(eventFrame("pusher:ping", {}));
    }
  }
}
