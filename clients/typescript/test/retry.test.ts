// Retries, timeouts and the consistency token against a real HTTP server on loopback that
// answers from a script (the answers a healthy live server does not give on demand).
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ConnectionFailed, InvalidRequest, MemseekClient, MemseekError, RateLimited, ResponseShapeError, ServerError, Timeout,
  Unavailable, type ClientOptions,
} from "../src/index.js";
import { closedPort, scriptedServer, type Reply } from "./support.js";

const HEALTH = { ok: true, db: true };
const BUSY: Reply = { status: 503, body: { error: "deadline_exceeded", detail: "busy" }, headers: { "Retry-After": "0" } };
const LIMITED: Reply = { status: 429, body: { error: "rate_limited", detail: "slow down" }, headers: { "Retry-After": "0" } };

function client(url: string, waits: number[], options: ClientOptions = {}): MemseekClient {
  const sleep = async (ms: number) => { waits.push(ms); };
  return new MemseekClient(url, { apiKey: "k", sleep, random: () => 0.5, ...options });
}

test("an idempotent call is retried on 503 and on 429 after Retry-After, and returns the answer", async () => {
  const server = await scriptedServer(BUSY, LIMITED, { status: 200, body: HEALTH });
  try {
    const waits: number[] = [];
    assert.deepEqual(await client(server.url, waits).health(), HEALTH);
    assert.deepEqual(waits, [0, 0]);
    assert.equal(server.seen.length, 3);
    assert.ok(server.seen.every(({ method, url }) => method === "GET" && url === "/health"));
  } finally {
    await server.close();
  }
});

test("without Retry-After the wait is the jittered backoff; after the last attempt the error is thrown", async () => {
  const server = await scriptedServer(...[1, 2, 3].map(() => ({ status: 503, body: { error: "database_unavailable",
                                                                                    detail: "down" } })));
  try {
    const waits: number[] = [];
    const memseek = client(server.url, waits, { retry: { attempts: 3, backoffBaseMs: 100, backoffMaxMs: 1000 } });
    const error = await memseek.timeline({ entity: "contact.ada" }).then(() => null, (caught: unknown) => caught);
    assert.ok(error instanceof Unavailable);
    assert.deepEqual([error.status, error.code, error.retryAfter], [503, "database_unavailable", null]);
    assert.deepEqual(waits, [50, 100]);
    assert.equal(server.seen.length, 3);
  } finally {
    await server.close();
  }
});

test("a POST that only reads is retried; a write is sent once and its 503 or 429 thrown", async () => {
  const server = await scriptedServer(LIMITED, { status: 200, body: { hits: [] } }, BUSY, LIMITED);
  try {
    const waits: number[] = [];
    const memseek = client(server.url, waits);
    assert.deepEqual(await memseek.search({ q: "budget" }), { hits: [] });
    await assert.rejects(memseek.writeRecords([{ entity: "e", collection: "main", type: "note", text: "t" }]),
                         Unavailable);
    await assert.rejects(memseek.retrieve({ query: "budget", entity: "e" }), (error: unknown) =>
      error instanceof RateLimited && error.retryAfter === 0 && error.code === "rate_limited");
    assert.deepEqual(server.seen.map(({ method, url }) => `${method} ${url}`),
                     ["POST /search", "POST /search", "POST /records", "POST /retrieve"]);
    assert.deepEqual(JSON.parse(server.seen[0].body), { q: "budget" });
    assert.equal(server.seen[0].headers["content-type"], "application/json");
    assert.deepEqual(waits, [0]);
  } finally {
    await server.close();
  }
});

test("a Retry-After beyond the policy's bound is not waited out", async () => {
  const server = await scriptedServer({ ...BUSY, headers: { "Retry-After": "120" } });
  try {
    const waits: number[] = [];
    await assert.rejects(client(server.url, waits).health(), (error: unknown) =>
      error instanceof Unavailable && error.retryAfter === 120);
    assert.deepEqual(waits, []);
  } finally {
    await server.close();
  }
});

test("a refused connection is retried for reads, then thrown as ConnectionFailed; a write is not retried", async () => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  const waits: number[] = [];
  await assert.rejects(client(url, waits).collections(), (error: unknown) =>
    error instanceof ConnectionFailed && error.code === "connection_failed" && error.detail.startsWith("GET /collections"));
  assert.equal(waits.length, 2);
  const writeWaits: number[] = [];
  await assert.rejects(client(url, writeWaits).approveRecord("00000000-0000-4000-8000-000000000000"), ConnectionFailed);
  assert.deepEqual(writeWaits, []);
});

test("an attempt past the timeout is a Timeout, not retried", async () => {
  const server = await scriptedServer({ status: 200, body: HEALTH, delayMs: 2000 });
  try {
    const waits: number[] = [];
    await assert.rejects(client(server.url, waits, { timeoutMs: 100 }).health(), (error: unknown) =>
      error instanceof Timeout && error.code === "timeout");
    assert.deepEqual(waits, []);
  } finally {
    await server.close();
  }
});

test("a 2xx body that is not JSON is a ResponseShapeError; a proxy's error page keeps its status", async () => {
  const server = await scriptedServer({ status: 200, body: "<html>ok</html>" }, { status: 502, body: "<html>bad</html>" });
  try {
    const memseek = client(server.url, []);
    await assert.rejects(memseek.health(), (error: unknown) =>
      error instanceof ResponseShapeError && error.code === "response_shape" && error.status === 200);
    await assert.rejects(memseek.health(), (error: unknown) =>
      error instanceof ServerError && error.code === "http_502" && error.detail === "<html>bad</html>");
  } finally {
    await server.close();
  }
});

test("the client sends the latest consistency token any response named, and a token set by hand", async () => {
  const tokens = [null, "0/3A1F2B8", null, "0/1000", "1/0", "garbage", null];
  const server = await scriptedServer(...tokens.map((token): Reply => ({
    status: 200, body: HEALTH, headers: token === null ? {} : { "Memseek-Consistency-Token": token } })));
  try {
    const memseek = client(server.url, []);
    for (const _ of tokens) {
      await memseek.health();
    }
    assert.equal(memseek.consistencyToken, "1/0");
    assert.deepEqual(server.seen.map(({ headers }) => headers["memseek-consistency-token"] ?? null),
                     [null, null, "0/3A1F2B8", "0/3A1F2B8", "0/3A1F2B8", "1/0", "1/0"]);
    assert.ok(server.seen.every(({ headers }) => headers.authorization === "Bearer k"));
  } finally {
    await server.close();
  }
});

test("a call that cannot become a request is an InvalidRequest, and nothing is sent", async () => {
  const server = await scriptedServer({ status: 200, body: HEALTH });
  try {
    const hostile = client(server.url, [], { apiKey: "key\r\nX-Injected: yes" });
    await assert.rejects(hostile.health(), (error: unknown) =>
      error instanceof InvalidRequest && error instanceof MemseekError && error.code === "invalid_request");
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await assert.rejects(client(server.url, []).search({ q: "x", params: cyclic }), (error: unknown) =>
      error instanceof InvalidRequest && error.detail.startsWith("POST /search: the body is not JSON"));
    await assert.rejects(client(server.url, []).search({ q: "x", k: 10n as unknown as number }), InvalidRequest);
    await assert.rejects(new MemseekClient("not a url").health(), InvalidRequest);
    assert.equal(server.seen.length, 0);
    // A path parameter is one segment, whatever it holds.
    const waits: number[] = [];
    await client(server.url, waits).getRecord("../health?x=1#y");
    assert.equal(server.seen[0].url, "/records/..%2Fhealth%3Fx%3D1%23y");
  } finally {
    await server.close();
  }
});

test("call sends any operation by its id, with the document's method and path", async () => {
  const server = await scriptedServer({ status: 200, body: { id: "r1" } }, { status: 200, body: { hits: [] } });
  try {
    const memseek = client(server.url, []);
    assert.deepEqual(await memseek.call("record_get", { path: { id: "r 1" } }), { id: "r1" });
    await memseek.call("memory_grep_retrieve", { query: { q: "blue", limit: 2 } });
    assert.deepEqual(server.seen.map(({ method, url }) => `${method} ${url}`),
                     ["GET /records/r%201", "GET /memory/grep?q=blue&limit=2"]);
  } finally {
    await server.close();
  }
});

// Compiled, never run: the arguments the generated types refuse (tsc fails the build if any is accepted).
export function refusedByTheTypes(memseek: MemseekClient): void {
  // @ts-expect-error: record_get's path parameter is id
  void memseek.call("record_get", { path: { record: "x" } });
  // @ts-expect-error: GET /memory/grep has no member k
  void memseek.memoryGrep({ q: "blue", k: 3 });
  // @ts-expect-error: a record needs its type
  void memseek.writeRecords([{ entity: "e", collection: "main", text: "t" }]);
  // @ts-expect-error: /collections takes no query string
  void memseek.call("collection_list", { query: { limit: 1 } });
}
