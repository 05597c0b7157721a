/** The list shape of API.md §0: `{ data, meta, links }`. */
export function paginate<T>(opts: { data: T[]; total: number; page: number; perPage: number; url: string }) {
  const { data, total, page, perPage } = opts;
  const lastPage = Math.max(1, Math.ceil(total / perPage));
  const base = new URL(opts.url);
  const pageUrl = (p: number) => {
    const u = new URL(base);
    u.searchParams.set("page", String(p));
    return u.toString();
  };
  const from = data.length > 0 ? (page - 1) * perPage + 1 : null;
  return {
    data,
    meta: {
      current_page: page,
      per_page: perPage,
      total,
      last_page: lastPage,
      from,
      to: from === null ? null : from + data.length - 1,
      path: `${base.origin}${base.pathname}`,
    },
    links: {
      first: pageUrl(1),
      last: pageUrl(lastPage),
      prev: page > 1 ? pageUrl(Math.min(page - 1, lastPage)) : null,
      next: page < lastPage ? pageUrl(page + 1) : null,
    },
  };
}
