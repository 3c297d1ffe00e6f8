/**
 * Following a route's cursor: `walk` asks for one page after another, each with the cursor the
 * previous page named, until a page names none, and yields the items of every page in order.
 */

/**
 * Every item of every page: `fetchPage(query)` first, then `fetchPage({...query, [cursorParam]:
 * next(page)})` while `next(page)` is not null.
 */
export async function* walk<Q extends object, P, I, K extends keyof Q>(
  fetchPage: (query: Q) => Promise<P>, query: Q, items: (page: P) => readonly I[],
  next: (page: P) => Q[K] | null, cursorParam: K): AsyncGenerator<I, void, undefined> {
  let current = query;
  for (;;) {
    const page = await fetchPage(current);
    yield* items(page);
    const cursor = next(page);
    if (cursor === null || cursor === undefined) {
      return;
    }
    current = { ...current, [cursorParam]: cursor };
  }
}
