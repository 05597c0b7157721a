/**
 * Reads at most `limit` bytes of an answer's body as UTF-8 and drops the rest, so a huge or
 * endless answer from another server (a webhook receiver, the SMS provider) costs nothing.
 */
export async function readCapped(res: Response, limit: number): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    void reader.cancel().catch(() => {});
  }
  const all = Buffer.concat(chunks).subarray(0, limit);
  return new TextDecoder("utf-8", { fatal: false }).decode(all);
}
