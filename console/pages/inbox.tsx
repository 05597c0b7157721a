import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, type Message, ok } from "../api";
import { useSession } from "../context";
import { listen, onReconnect } from "../realtime";
import { CopyButton, Empty, ErrorBox, useLoad } from "../ui";
import { useVirtualList } from "../virtual";

const PER_PAGE = 50;
type Filters = { q: string; from: string; hasCode: boolean };

/**
 * Messages of one number or of every number, newest first, arriving live; pages load as the
 * list scrolls (a history may hold thousands, only the rows in view are rendered), and after a
 * dropped connection the first page is read again so nothing received meanwhile is missed.
 */
export function InboxPage() {
  const { orgId } = useSession();
  const numbers = useLoad(async () => (await ok(api.GET("/api/numbers"))).data, [orgId]);
  const [numberId, setNumberId] = useState<number | null>(() => Number(new URLSearchParams(location.search).get("number")) || null);
  const [filters, setFilters] = useState<Filters>({ q: "", from: "", hasCode: false });
  const [draft, setDraft] = useState<Filters>(filters);

  const choose = (id: number | null) => {
    setNumberId(id);
    history.replaceState(null, "", id ? `/inbox?number=${id}` : "/inbox");
  };
  const list = numbers.data ?? [];
  // A number of the address (`?number=`) that this organization does not have (another one's,
  // after switching): every number instead.
  const shown = numberId !== null && numbers.data && !list.some((n) => n.id === numberId) ? null : numberId;
  useEffect(() => {
    if (shown === null && numberId !== null && numbers.data) choose(null);
  }, [shown, numberId, numbers.data]);
  if (!numbers.loading && list.length === 0)
    return (
      <>
        <ErrorBox error={numbers.error} />
        <Empty>
          <p>No numbers yet, so no messages.</p>
          <p>
            Order or claim a number on the Numbers page (operators fill the pool with <code>simhost pool add</code>), then send it an SMS.
          </p>
        </Empty>
      </>
    );

  return (
    <section>
      <form
        class="filters"
        aria-label="Filter messages"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters(draft);
        }}
      >
        <div class="field">
          <label for="inbox-number">Number</label>
          <select id="inbox-number" value={shown ? String(shown) : ""} onChange={(e) => choose(Number((e.target as HTMLSelectElement).value) || null)}>
            <option value="">All numbers</option>
            {list.map((n) => (
              <option key={n.id} value={String(n.id)}>
                {n.number}
                {n.organizations.find((o) => o.id === orgId)?.alias ? ` (${n.organizations.find((o) => o.id === orgId)!.alias})` : ""}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="inbox-q">Text contains</label>
          <input id="inbox-q" type="search" value={draft.q} onInput={(e) => setDraft({ ...draft, q: (e.target as HTMLInputElement).value })} />
        </div>
        <div class="field">
          <label for="inbox-from">From</label>
          <input
            id="inbox-from"
            value={draft.from}
            placeholder="+15550001111"
            onInput={(e) => setDraft({ ...draft, from: (e.target as HTMLInputElement).value })}
          />
        </div>
        <div class="field check">
          <input
            id="inbox-code"
            type="checkbox"
            checked={draft.hasCode}
            onChange={(e) => setDraft({ ...draft, hasCode: (e.target as HTMLInputElement).checked })}
          />
          <label for="inbox-code">Only messages with a code</label>
        </div>
        <button type="submit">Filter</button>
      </form>
      {numbers.data && <Messages key={`${orgId}:${shown}:${JSON.stringify(filters)}`} numberId={shown} filters={filters} orgId={orgId} />}
    </section>
  );
}

const filterQuery = (f: Filters) => ({
  ...(f.q ? { q: f.q } : {}),
  ...(f.from ? { from: f.from } : {}),
  ...(f.hasCode ? { has_code: "true" as const } : {}),
});

/** Where older messages come from as the list scrolls: a number's history (pages) or every number's inbox (keyset). */
type Source = { more(): Promise<Message[]>; first(): Promise<Message[]>; done(): boolean; total(): number | null };

function numberSource(hostedSim: number, f: Filters): Source {
  let page = 0;
  let last = 1;
  let total: number | null = null;
  const fetchPage = async (n: number) => {
    const answer = await ok(
      api.GET("/api/messages", { params: { query: { hosted_sim: hostedSim, page: n, per_page: PER_PAGE, direction: "inbound", ...filterQuery(f) } } }),
    );
    total = answer.meta.total;
    last = answer.meta.last_page;
    return answer.data;
  };
  return {
    async more() {
      const rows = await fetchPage(page + 1);
      page += 1;
      return rows;
    },
    first: () => fetchPage(1),
    done: () => page >= last,
    total: () => total,
  };
}

function inboxSource(f: Filters): Source {
  let before: number | null | undefined;
  const fetchPage = async (from: number | undefined) => {
    const answer = await ok(api.GET("/api/inbox", { params: { query: { per_page: PER_PAGE, ...(from ? { before: from } : {}), ...filterQuery(f) } } }));
    return answer;
  };
  return {
    async more() {
      const answer = await fetchPage(before ?? undefined);
      before = answer.meta.next_before;
      return answer.data;
    },
    first: async () => (await fetchPage(undefined)).data,
    done: () => before === null,
    total: () => null,
  };
}

const time = (m: Message) => Date.parse(m.received_at ?? m.created_at);
function merge(a: Message[], b: Message[]): Message[] {
  const byId = new Map<number, Message>();
  for (const m of [...a, ...b]) byId.set(m.id, m);
  return [...byId.values()].sort((x, y) => time(y) - time(x) || y.id - x.id);
}

/**
 * Whether a live message belongs in the list: one number's, or every number's (`numberId` null:
 * the organization's channel scopes them, numbers it gained since the page loaded included).
 */
function matches(m: Message, numberId: number | null, f: Filters) {
  if (m.direction !== "inbound" || m.hosted_sim_id === null || (numberId !== null && m.hosted_sim_id !== numberId)) return false;
  if (f.q && !m.text.toLowerCase().includes(f.q.toLowerCase())) return false;
  // The server compares the sender without regard to letter case; so does the live list.
  if (f.from && m.from.toLowerCase() !== f.from.toLowerCase()) return false;
  return !(f.hasCode && !m.code);
}

/** "3 messages of every number, newest first"; "50+ …" while older ones remain to load. */
function everyNumberCount(n: number, done: boolean): string {
  if (n === 0 && done) return "No messages of any number";
  return `${n}${done ? "" : "+"} ${n === 1 && done ? "message" : "messages"} of every number, newest first`;
}

/**
 * The message list, virtualised: however many messages were loaded, only the rows in view are in
 * the page, and the next page is fetched when the last loaded rows come into view.
 */
function Messages(props: { numberId: number | null; filters: Filters; orgId: number }) {
  const source = useMemo(() => (props.numberId !== null ? numberSource(props.numberId, props.filters) : inboxSource(props.filters)), []);
  const [messages, setMessages] = useState<Message[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [total, setTotal] = useState<number | null>(null);
  const [latest, setLatest] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(false);
  const scroller = useRef<HTMLElement>(null);
  const list = useVirtualList({ count: messages.length, scroller: () => scroller.current, estimate: 96, key: (i) => messages[i]?.id ?? i });
  const rows = list.getVirtualItems();

  // One page at a time: effects may ask again before the `loading` state of the first ask renders.
  const inFlight = useRef(false);
  const loadMore = async () => {
    if (inFlight.current || (loaded && source.done())) return;
    inFlight.current = true;
    setLoading(true);
    try {
      const older = await source.more();
      setMessages((old) => merge(old, older));
      setTotal(source.total());
      setLoaded(true);
    } catch (e) {
      setError(e);
    } finally {
      inFlight.current = false;
      setLoading(false);
    }
  };

  // The first page, then the next one whenever the last loaded rows come into view.
  const lastShown = rows.at(-1)?.index ?? -1;
  useEffect(() => {
    if (!loaded || lastShown >= messages.length - 10) loadMore();
  }, [lastShown, messages.length, loaded]);

  useEffect(() => {
    const off = listen<{ message: Message }>(`private-organization.${props.orgId}`, "message.received", ({ message }) => {
      if (!matches(message, props.numberId, props.filters)) return;
      setMessages((old) => merge([message], old));
      setTotal((t) => (t === null ? t : t + 1));
      setLatest(`New message from ${message.from}${message.code ? ` with code ${message.code}` : ""}.`);
    });
    // After a dropped connection, the newest page again: what arrived meanwhile.
    const offReconnect = onReconnect(() => {
      source
        .first()
        .then((rows) => setMessages((old) => merge(old, rows)))
        .catch(setError);
    });
    return () => {
      off();
      offReconnect();
    };
  }, []);

  const filtered = props.filters.q || props.filters.from || props.filters.hasCode;
  return (
    <>
      <ErrorBox error={error} />
      <p class="meta" role="status">
        {total !== null ? `${total} ${total === 1 ? "message" : "messages"}` : loaded ? everyNumberCount(messages.length, source.done()) : ""}
      </p>
      <p class="visually-hidden" role="status" aria-live="polite">
        {latest}
      </p>
      {loaded && messages.length === 0 && (
        <Empty>
          <p>No messages yet{filtered ? " matching these filters" : ""}.</p>
          <p>They appear here as soon as an SMS arrives on {props.numberId !== null ? "the number" : "one of your numbers"}; leave this page open.</p>
        </Empty>
      )}
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region takes focus so that a keyboard can scroll it (axe scrollable-region-focusable) */}
      <section ref={scroller} class="scroller" tabIndex={0} aria-label="Messages, scroll for older ones">
        <ol class="messages" aria-label="Messages" style={{ height: `${list.getTotalSize()}px` }}>
          {rows.map((row) => (
            <MessageItem key={row.key} message={messages[row.index]!} index={row.index} start={row.start} measure={list.measureElement} setSize={total ?? -1} />
          ))}
        </ol>
        {loading && <p class="more">Loading older messages…</p>}
      </section>
    </>
  );
}

function MessageItem(props: { message: Message; index: number; start: number; measure: (el: Element | null) => void; setSize: number }) {
  const m = props.message;
  const at = m.received_at ?? m.created_at;
  return (
    <li
      class="message"
      data-message-id={m.id}
      data-index={props.index}
      ref={props.measure}
      aria-posinset={props.index + 1}
      aria-setsize={props.setSize}
      style={{ transform: `translateY(${props.start}px)` }}
    >
      <div class="head">
        <span>
          From <span class="mono">{m.from}</span> to <span class="mono">{m.number}</span>
        </span>
        <time dateTime={at}>{new Date(at).toLocaleString()}</time>
      </div>
      {m.code && (
        <p class="code">
          <span class="visually-hidden">Code </span>
          <mark class="mono">{m.code}</mark> <CopyButton text={m.code} what={`code ${m.code}`} />
        </p>
      )}
      <p class="text">{m.text}</p>
    </li>
  );
}
