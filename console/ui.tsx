import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError } from "./api";

/** Client-side navigation: the server answers every console path with the same page. */
const routeListeners = new Set<() => void>();
export function navigate(path: string) {
  if (path === location.pathname + location.search) return;
  history.pushState(null, "", path);
  for (const fn of routeListeners) fn();
}
addEventListener("popstate", () => {
  for (const fn of routeListeners) fn();
});
export function usePath(): string {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const fn = () => setPath(location.pathname);
    routeListeners.add(fn);
    return () => routeListeners.delete(fn);
  }, []);
  return path;
}

export function Link(props: { href: string; children: ComponentChildren; current?: boolean; class?: string }) {
  return (
    <a
      href={props.href}
      class={props.class}
      aria-current={props.current ? "page" : undefined}
      onClick={(e) => {
        if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(props.href);
      }}
    >
      {props.children}
    </a>
  );
}

export function errorText(e: unknown): string {
  return e instanceof ApiError || e instanceof Error ? e.message : String(e);
}

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {errorText(error)}
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <div class="empty">{children}</div>;
}

/** `run(fn)` runs an action, keeping its error to show and a busy flag for its button. */
export function useAction() {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const run = async (fn: () => Promise<unknown>) => {
    setError(null);
    setBusy(true);
    try {
      await fn();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, run, setError };
}

/** Loads `fn()` when `deps` change; `reload()` loads again. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setLoading(true);
    fn()
      .then((d) => {
        if (!live) return;
        setData(d);
        setError(null);
      })
      .catch((e) => live && setError(e))
      .finally(() => live && setLoading(false));
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { data, error, loading, reload: () => setTick((t) => t + 1), setData };
}

/**
 * Copies `text`; says "Copied" only when the clipboard took it. Where it cannot (denied, or no
 * clipboard: a page served over plain HTTP to another machine), it says so, and the text stays
 * on the page to select. `what` ("code 482913", "the key") completes the button's name as
 * visually hidden text, so the name starts with what the button shows; a live region announces
 * the outcome.
 */
export function CopyButton({ text, what }: { text: string; what: string }) {
  const [outcome, setOutcome] = useState<"copied" | "failed" | null>(null);
  return (
    <>
      <button
        type="button"
        class="copy"
        onClick={async () => {
          const copied = navigator.clipboard
            ? await navigator.clipboard.writeText(text).then(
                () => true,
                () => false,
              )
            : false;
          setOutcome(copied ? "copied" : "failed");
          setTimeout(() => setOutcome(null), 2500);
        }}
      >
        {outcome === "copied" ? "Copied" : outcome === "failed" ? "Copy failed: select the code" : "Copy"}
        {outcome === null && <span class="visually-hidden"> {what}</span>}
      </button>
      <span role="status" class="visually-hidden">
        {outcome === "copied" ? `Copied ${what} to the clipboard.` : outcome === "failed" ? `Could not copy ${what}: select it on the page.` : ""}
      </span>
    </>
  );
}

/** Seconds left until `until`, updated every second; "expired" at zero. */
export function Countdown({ until }: { until: string }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const id = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(id);
  }, []);
  const left = Math.max(0, Math.round((Date.parse(until) - now) / 1000));
  if (left === 0) return <span>expired</span>;
  const m = Math.floor(left / 60);
  const s = String(left % 60).padStart(2, "0");
  return (
    <time dateTime={until} title={new Date(until).toLocaleString()}>
      {m}:{s} left
    </time>
  );
}

export function When({ at }: { at: string | null | undefined }) {
  if (!at) return <span>never</span>;
  return <time dateTime={at}>{new Date(at).toLocaleString()}</time>;
}

/** A small form field: a visible label tied to its input. */
export function Field(props: {
  label: string;
  name: string;
  type?: string;
  value?: string;
  required?: boolean;
  autoComplete?: string;
  inputMode?: string;
  hint?: string;
  onInput?: (v: string) => void;
}) {
  const id = `f-${props.name}`;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        name={props.name}
        type={(props.type ?? "text") as "text"}
        value={props.value}
        required={props.required}
        autoComplete={props.autoComplete}
        inputMode={props.inputMode as never}
        aria-describedby={props.hint ? `${id}-hint` : undefined}
        onInput={(e) => props.onInput?.((e.target as HTMLInputElement).value)}
      />
      {props.hint && (
        <small id={`${id}-hint`} class="hint">
          {props.hint}
        </small>
      )}
    </div>
  );
}
