// Retries in front of the live server: a proxy sheds the first requests with 503 or 429 (as a
// load balancer or the server's own limiter does), then passes requests on. A read is retried and
// answered by the server; a write is sent once, its 503 thrown, and nothing is written.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { MemseekClient, RateLimited, Unavailable } from "../src/index.js";
import { flakyProxy, liveClient, liveServer, NO_LIVE_SERVER, type Reply } from "./support.js";

const live = liveServer();
const skip = live === null ? NO_LIVE_SERVER : false;
const ENTITY = "contact.ts-retry";
const SHED: Reply = { status: 503, body: { error: "deadline_exceeded", detail: "shed" }, headers: { "Retry-After": "0" } };
const LIMITED: Reply = { status: 429, body: { error: "rate_limited", detail: "slow" }, headers: { "Retry-After": "0" } };
let direct: MemseekClient;
let id: string;

before(async () => {
  if (live !== null) {
    direct = liveClient(live);
    [{ id }] = (await direct.writeRecords([{ entity: ENTITY, collection: "main", type: "note",
                                            text: "The retry lantern is green." }])).inserted;
  }
});

test("a read shed with 503 then 429 is retried and answered by the server, body intact", { skip }, async () => {
  const proxy = await flakyProxy(live!.url, SHED, LIMITED);
  const searchProxy = await flakyProxy(live!.url, SHED, LIMITED);
  try {
    const memseek = liveClient(live!);
    const retried = new MemseekClient(proxy.url, { apiKey: live!.key, retry: { attempts: 3 } });
    assert.equal((await retried.getRecord(id)).id, id);
    const retriedSearch = new MemseekClient(searchProxy.url, { apiKey: live!.key, retry: { attempts: 3 } });
    const found = await retriedSearch.search({ q: "retry lantern", mode: "text", scope: { entities: [ENTITY] }, k: 1 });
    assert.deepEqual(found.hits.map((hit) => hit.id), [id]);
    assert.deepEqual(found.hits.map((hit) => hit.id),
                     (await memseek.search({ q: "retry lantern", mode: "text", scope: { entities: [ENTITY] }, k: 1 }))
                       .hits.map((hit) => hit.id));
    assert.deepEqual(proxy.seen.map(({ method, url }) => `${method} ${url}`), Array(3).fill(`GET /records/${id}`));
    assert.deepEqual(searchProxy.seen.map(({ method, url }) => `${method} ${url}`), Array(3).fill("POST /search"));
    assert.ok(searchProxy.seen.every(({ body }) => JSON.parse(body).q === "retry lantern"));
  } finally {
    await proxy.close();
    await searchProxy.close();
  }
});

test("a write shed with 503 is sent once and thrown; nothing is written", { skip }, async () => {
  const proxy = await flakyProxy(live!.url, SHED, LIMITED);
  try {
    const memseek = new MemseekClient(proxy.url, { apiKey: live!.key });
    const entity = "contact.ts-shed";
    await assert.rejects(memseek.writeRecords([{ entity, collection: "main", type: "note", text: "shed" }]),
                         (error: unknown) => error instanceof Unavailable && error.code === "deadline_exceeded");
    await assert.rejects(memseek.retrieve({ query: "shed", entity }), RateLimited);
    assert.equal(proxy.seen.length, 2);
    assert.deepEqual((await direct.timeline({ entity })).records, []);
  } finally {
    await proxy.close();
  }
});
