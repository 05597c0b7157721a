import { useEffect, useRef, useState } from "preact/hooks";
import { api, type Message, ok } from "../api";
import { useSession } from "../context";
import { listen, onReconnect } from "../realtime";
import { CopyButton, Empty, ErrorBox, useLoad } from "../ui";

const PER_PAGE = 50;
type Filters = { q: string; from: string; hasCode: boolean };

/**
 * Messages of one number (or the latest of every number), newest first, arriving live; pages
 * load as the list scrolls (a number's history may hold thousands), and after a dropped
 * connection the first page is read again so nothing received meanwhile is missed.
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
          <select id="inbox-number" value={numberId ? String(numberId) : ""} onChange={(e) => choose(Number((e.target as HTMLSelectElement).value) || null)}>
            <option value="">All numbers (latest)</option>
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
      {numbers.data && (
        <Messages
          key={`${orgId}:${numberId}:${JSON.stringify(filters)}`}
          numberIds={numberId ? [numberId] : list.map((n) => n.id)}
          single={numberId !== null}
          filters={filters}
          orgId={orgId}
        />
      )}
    </section>
  );
}

async function fetchPage(hostedSim: number, page: number, f: Filters, perPage = PER_PAGE) {
  return ok(
    api.GET("/api/messages", {
      params: {
        query: {
          hosted_sim: hostedSim,
          page,
          per_page: perPage,
          direction: "inbound",
          ...(f.q ? { q: f.q } : {}),
          ...(f.from ? { from: f.from } : {}),
          ...(f.hasCode ? { has_code: "true" as const } : {}),
        },
      },
    }),
  );
}

const time = (m: Message) => Date.parse(m.received_at ?? m.created_at);
function merge(a: Message[], b: Message[]): Message[] {
  const byId = new Map<number, Message>();
  for (const m of [...a, ...b]) byId.set(m.id, m);
  return [...byId.values()].sort((x, y) => time(y) - time(x) || y.id - x.id);
}

function matches(m: Message, numberIds: number[], f: Filters) {
  if (m.direction !== "inbound" || m.hosted_sim_id === null || !numberIds.includes(m.hosted_sim_id)) return false;
  if (f.q && !m.text.toLowerCase().includes(f.q.toLowerCase())) return false;
  if (f.from && m.from !== f.from) return false;
  return !(f.hasCode && !m.code);
}

function Messages(props: { numberIds: number[]; single: boolean; filters: Filters; orgId: number }) {
  const [messages, setMessages] = useState<Message[]>([]);
  const [page, setPage] = useState(0);
  const [lastPage, setLastPage] = useState(1);
  const [total, setTotal] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(false);
  const sentinel = useRef<HTMLLIElement>(null);

  const firstPages = async () => {
    const targets = props.single ? props.numberIds : props.numberIds.slice(0, 25);
    const pages = await Promise.all(targets.map((id) => fetchPage(id, 1, props.filters, props.single ? PER_PAGE : 20)));
    return pages;
  };

  const loadMore = async () => {
    if (loading || page >= lastPage || (!props.single && page >= 1)) return;
    setLoading(true);
    try {
      if (page === 0) {
        const pages = await firstPages();
        setMessages((old) =>
          merge(
            old,
            pages.flatMap((p) => p.data),
          ),
        );
        if (props.single) {
          setLastPage(pages[0]!.meta.last_page);
          setTotal(pages[0]!.meta.total);
        }
        setPage(1);
      } else {
        const next = await fetchPage(props.numberIds[0]!, page + 1, props.filters);
        setMessages((old) => merge(old, next.data));
        setLastPage(next.meta.last_page);
        setTotal(next.meta.total);
        setPage(page + 1);
      }
    } catch (e) {
      setError(e);
    } finally {
      setLoading(false);
    }
  };

  useEffect(() => {
    loadMore();
  }, []);

  useEffect(() => {
    const el = sentinel.current;
    if (!el || !props.single) return;
    const seen = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && loadMore());
    seen.observe(el);
    return () => seen.disconnect();
  });

  useEffect(() => {
    const off = listen<{ message: Message }>(`private-organization.${props.orgId}`, "message.received", ({ message }) => {
      if (!matches(message, props.numberIds, props.filters)) return;
      setMessages((old) => merge([message], old));
      setTotal((t) => (t === null ? t : t + 1));
    });
    const offReconnect = onReconnect(() => {
      firstPages()
        .then((pages) =>
          setMessages((old) =>
            merge(
              old,
              pages.flatMap((p) => p.data),
            ),
          ),
        )
        .catch(setError);
    });
    return () => {
      off();
      offReconnect();
    };
  }, []);

  return (
    <>
      <ErrorBox error={error} />
      <p class="meta" role="status">
        {total !== null ? `${total} messages` : props.single ? "" : "The latest messages of each number; choose a number to scroll its whole history."}
      </p>
      {page > 0 && messages.length === 0 && (
        <Empty>
          <p>No messages yet{props.filters.q || props.filters.from || props.filters.hasCode ? " matching these filters" : ""}.</p>
          <p>They appear here as soon as an SMS arrives on the number; leave this page open.</p>
        </Empty>
      )}
      <ol class="messages" aria-label="Messages" aria-live="polite">
        {messages.map((m) => (
          <MessageItem key={m.id} message={m} />
        ))}
        {props.single && page < lastPage && (
          <li ref={sentinel} class="more">
            <button type="button" onClick={loadMore} disabled={loading}>
              {loading ? "Loading…" : "Load older messages"}
            </button>
          </li>
        )}
      </ol>
    </>
  );
}

function MessageItem({ message: m }: { message: Message }) {
  const at = m.received_at ?? m.created_at;
  return (
    <li class="message" data-message-id={m.id}>
      <div class="head">
        <span>
          From <span class="mono">{m.from}</span> to <span class="mono">{m.number}</span>
        </span>
        <time dateTime={at}>{new Date(at).toLocaleString()}</time>
      </div>
      {m.code && (
        <p class="code">
          <span class="visually-hidden">Code </span>
          <mark class="mono">{m.code}</mark> <CopyButton text={m.code} label={`Copy code ${m.code}`} />
        </p>
      )}
      <p class="text">{m.text}</p>
    </li>
  );
}
