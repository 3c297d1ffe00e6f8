// The memory brief and the lookups (grep, latest, around, read, ls, history) through the SDK
// against the live server.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { MemseekClient, NotFound, Unprocessable } from "../src/index.js";
import { liveClient, liveServer, NO_LIVE_SERVER } from "./support.js";

const live = liveServer();
const skip = live === null ? NO_LIVE_SERVER : false;
const ENTITY = "contact.ts-kim";
const TURNS = ["I bought a blue lantern at the market.", "Which colour was the lantern?", "The blue lantern was cheap.",
               "We should hang the blue lantern outside.", "Dinner is at eight."];
let memseek: MemseekClient;
let turns: string[];
let facts: string[];

const hour = (index: number) => new Date(Date.UTC(2026, 4, 1, 9 + index)).toISOString();
const passage = (id: string) => `passages/main/${ENTITY}/${id}`;

before(async () => {
  if (live === null) {
    return;
  }
  memseek = liveClient(live);
  turns = (await memseek.writeRecords(TURNS.map((text, index) => ({
    entity: ENTITY, collection: "main", type: "message", text, occurred_at: hour(index),
    content: { speaker: index % 2 === 0 ? "kim" : "assistant", thread: "t1" } })))).inserted.map(({ id }) => id);
  facts = [];
  for (const [day, text] of [[2, "Kim lives in Oslo."], [3, "Kim lives in Bergen."]] as const) {
    const [fact] = (await memseek.writeRecords([{ entity: ENTITY, collection: "main", type: "fact", key: "city", text,
                                                  occurred_at: new Date(Date.UTC(2026, 4, day)).toISOString() }]))
      .inserted;
    facts.push(fact.id);
  }
});

test("the brief and the ranked list", { skip }, async () => {
  const brief = await memseek.memorySearch({ query: "Where does Kim live?", entity: ENTITY });
  assert.equal(brief.found, brief.hits.length);
  assert.ok(brief.hits.every(({ path }) => path.startsWith("passages/")));
  assert.ok(JSON.stringify(brief.known).includes("Bergen"), JSON.stringify(brief));
  const ranked = await memseek.memorySearch({ query: "blue lantern", entity: ENTITY, scope: "passages/main",
                                              after: "2026-05-01" });
  assert.equal(ranked.known ?? null, null);
  assert.ok(ranked.hits.length > 0 && ranked.hits.every(({ id }) => [...turns, ...facts].includes(id)));
});

async function all<T>(items: AsyncIterable<T>): Promise<T[]> {
  const collected: T[] = [];
  for await (const item of items) {
    collected.push(item);
  }
  return collected;
}

test("each iterator, one item a page, yields what one large page holds", { skip }, async () => {
  const ids = (items: { id: string }[]) => items.map(({ id }) => id);
  assert.deepEqual(ids(await all(memseek.iterMemoryGrep({ q: "blue lantern", entity: ENTITY, limit: 1 }))),
                   ids((await memseek.memoryGrep({ q: "blue lantern", entity: ENTITY, limit: 100 })).hits));
  const under = { path: `passages/main/${ENTITY}`, before: hour(10) };
  assert.deepEqual(ids(await all(memseek.iterMemoryLatest({ ...under, limit: 1 }))),
                   ids((await memseek.memoryLatest({ ...under, limit: 100 })).hits));
  assert.deepEqual((await all(memseek.iterMemoryLs({ path: "passages/main", limit: 1 }))).map(({ name }) => name),
                   (await memseek.memoryLs({ path: "passages/main", limit: 100 })).entries.map(({ name }) => name));
  assert.deepEqual(ids(await all(memseek.iterMemoryHistory({ path: `facts/main/${ENTITY}/city`, limit: 1 }))), facts);
  assert.deepEqual(ids(await all(memseek.iterTimeline({ entity: ENTITY, limit: 2 }))),
                   ids((await memseek.timeline({ entity: ENTITY, limit: 100 })).records));
  assert.deepEqual(ids(await all(memseek.iterDocumentHistory({ entity: ENTITY, collection: "main", key: "city",
                                                              limit: 1 }))), [...facts].reverse());
  const pages = await all(memseek.iterLexicalPages({ contract_version: 1, mode: "lexical", scope: { entities: [ENTITY] },
                                                     query: { text: "lantern", scan_limit: 2 } }));
  assert.ok(pages.length > 1);
  assert.deepEqual(pages.flatMap(({ page }) => page.hits.map(({ record }) => record.id)).sort(),
                   [turns[0], turns[1], turns[2], turns[3]].sort());
});

test("grep finds every passage with the phrase, page by page, newest first", { skip }, async () => {
  const found: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await memseek.memoryGrep({ q: "BLUE LANTERN", entity: ENTITY, limit: 1, cursor });
    assert.ok(page.hits.length <= 1);
    found.push(...page.hits.map(({ id }) => id));
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  assert.deepEqual(found, [turns[3], turns[2], turns[0]]);
});

test("latest, around, read, ls and history", { skip }, async () => {
  const latest = await memseek.memoryLatest({ path: `passages/main/${ENTITY}`, limit: 10, before: hour(10) });
  assert.deepEqual(latest.hits.map(({ id }) => id).filter((id) => turns.includes(id)), [...turns].reverse());
  const around = await memseek.memoryAround({ path: passage(turns[2]), before: 1, after: 1 });
  assert.equal(around.passage.id, turns[2]);
  assert.deepEqual([around.before.map(({ id }) => id), around.after.map(({ id }) => id)], [[turns[1]], [turns[3]]]);
  const read = await memseek.memoryRead({ path: passage(turns[0]) });
  assert.equal(read.text, TURNS[0]);
  const ls = await memseek.memoryLs({ path: "passages/main", limit: 100 });
  assert.ok(ls.entries.some(({ name }) => name === ENTITY), JSON.stringify(ls.entries));
  const history = await memseek.memoryHistory({ path: `facts/main/${ENTITY}/city` });
  assert.deepEqual(history.versions.map(({ id }) => id), facts);
});

test("a bad path names itself; another workspace's path is NotFound", { skip }, async () => {
  await assert.rejects(memseek.memoryRead({ path: "nowhere/at/all" }), (error: unknown) =>
    error instanceof Unprocessable && error.path === "path");
  const other: MemseekClient = liveClient(live!, { apiKey: live!.otherKey });
  await assert.rejects(other.memoryRead({ path: passage(turns[0]) }), NotFound);
});
