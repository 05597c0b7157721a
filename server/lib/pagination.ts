import { type TSchema, Type } from "@sinclair/typebox";
import { clientUrl } from "./versions";

const orNull = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()]);

/** The schema of what `paginate` answers, for items of `item`: one definition for every list. */
export function PageOf<T extends TSchema>(item: T) {
  return Type.Object({
    data: Type.Array(item),
    meta: Type.Object({
      current_page: Type.Integer(),
      per_page: Type.Integer(),
      total: Type.Integer(),
      last_page: Type.Integer(),
      from: orNull(Type.Integer()),
      to: orNull(Type.Integer()),
      path: Type.String(),
    }),
    links: Type.Object({ first: Type.String(), last: Type.String(), prev: orNull(Type.String()), next: orNull(Type.String()) }),
  });
}

/**
 * The list shape of API.md §0: `{ data, meta, links }`. Links and `meta.path` are built from the
 * address the client used, version prefix included (`/api/v2/messages?...` pages on under
 * `/api/v2`), not from the unprefixed route that answered it.
 */
export function paginate<T>(opts: { data: T[]; total: number; page: number; perPage: number; request: Request }) {
  const { data, total, page, perPage } = opts;
  const lastPage = Math.max(1, Math.ceil(total / perPage));
  const base = new URL(clientUrl(opts.request));
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
