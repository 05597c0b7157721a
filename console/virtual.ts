import { elementScroll, observeElementOffset, observeElementRect, Virtualizer } from "@tanstack/virtual-core";
import { useLayoutEffect, useReducer, useRef } from "preact/hooks";

/**
 * A virtualised list in a scrolling element (@tanstack/virtual-core, the headless core of
 * TanStack Virtual, wired to Preact as its React adapter does): only the rows in view, plus
 * `overscan`, are rendered; rows are measured as they render, so they may differ in height.
 */
export function useVirtualList(opts: { count: number; scroller: () => HTMLElement | null; estimate: number; key: (index: number) => number | string }) {
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const options = {
    count: opts.count,
    getScrollElement: opts.scroller,
    estimateSize: () => opts.estimate,
    getItemKey: opts.key,
    overscan: 6,
    scrollToFn: elementScroll,
    observeElementRect,
    observeElementOffset,
    onChange: () => rerender(0),
  };
  const list = useRef<Virtualizer<HTMLElement, Element> | null>(null);
  list.current ??= new Virtualizer<HTMLElement, Element>(options);
  list.current.setOptions(options);
  useLayoutEffect(() => list.current!._didMount(), []);
  useLayoutEffect(() => list.current!._willUpdate());
  return list.current;
}
