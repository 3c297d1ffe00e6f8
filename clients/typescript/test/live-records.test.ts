// The write side and the plain reads against the live server: records, review, timeline,
// document, collections, health; the error mapping (401, 404, 422 with its path); the consistency
// token carried from a write to the next read.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { Conflict, MemseekClient, NotFound, Unauthorized, Unprocessable } from "../src/index.js";
import { liveClient, liveServer, NO_LIVE_SERVER, recordingFetch } from "./support.js";

const live = liveServer();
const skip = live === null ? NO_LIVE_SERVER : false;
const ENTITY = "contact.ts-ada";
let memseek: MemseekClient;

before(async () => {
  if (live !== null) {
    memseek = liveClient(live);
    // The server's first write loads the embedding model: not any one test's cost.
    await memseek.writeRecords([{ entity: "contact.ts-warm", collection: "main", type: "note", text: "warm" }]);
  }
});

test("a written batch reads back record by record, on the timeline and in the document", { skip }, async () => {
  const result = await memseek.writeRecords([
    { entity: ENTITY, collection: "main", type: "note", text: "Ada prefers email.", content: { speaker: "ada" },
      occurred_at: "2026-03-04T05:06:07Z" },
    { entity: ENTITY, collection: "main", type: "fact", key: "city", text: "Ada lives in Turin." },
    { entity: ENTITY, collection: "main", type: "fact", key: "city", text: "Ada lives in Milan." },
  ]);
  assert.deepEqual(result.inserted.map(({ index }) => index), [0, 1, 2]);
  assert.deepEqual(result.duplicates, []);
  const note = await memseek.getRecord(result.inserted[0].id);
  assert.deepEqual([note.entity, note.collection, note.type, note.key ?? null], [ENTITY, "main", "note", null]);
  assert.equal((note.content as Record<string, unknown>).speaker, "ada");
  assert.equal(Date.parse(note.occurred_at), Date.parse("2026-03-04T05:06:07Z"));
  const page = await memseek.timeline({ entity: ENTITY, limit: 2 });
  assert.equal(page.records.length, 2);
  assert.notEqual(page.next_before_seq, null);
  const rest = await memseek.timeline({ entity: ENTITY, before_seq: page.next_before_seq as number, types: "note" });
  assert.deepEqual(rest.records.map(({ id }) => id), [result.inserted[0].id]);
  const document = await memseek.document({ entity: ENTITY, collections: "main" });
  assert.ok(JSON.stringify(document).includes("Ada lives in Milan."));
  assert.ok(!JSON.stringify(document).includes("Ada lives in Turin."));
  const history = await memseek.documentHistory({ entity: ENTITY, collection: "main", key: "city", limit: 10 });
  assert.deepEqual(history.versions.map(({ id }) => id), [result.inserted[2].id, result.inserted[1].id]);
});

test("approving a draft writes its active successor; rejecting withdraws it; approving twice is a Conflict",
     { skip }, async () => {
  const drafts = (await memseek.writeRecords([
    { entity: ENTITY, collection: "main", type: "fact", key: "title", text: "Ada is CTO.", status: "draft" },
    { entity: ENTITY, collection: "main", type: "fact", key: "team", text: "Ada runs infra.", status: "draft" },
  ])).inserted;
  const approved = await memseek.approveRecord(drafts[0].id);
  assert.equal(approved.draft_id, drafts[0].id);
  assert.deepEqual([approved.record.status, approved.record.key, approved.record.text],
                   ["active", "title", "Ada is CTO."]);
  const rejected = await memseek.rejectRecord(drafts[1].id);
  assert.equal(rejected.draft_id, drafts[1].id);
  assert.equal(rejected.record.tombstone, true);
  await assert.rejects(memseek.approveRecord(approved.record.id), (error: unknown) =>
    error instanceof Conflict && error.status === 409 && error.code === "not_a_draft");
});

test("collections, health and the server's own OpenAPI document", { skip }, async () => {
  const names = (await memseek.collections()).collections.map(({ name }) => name);
  assert.ok(names.includes("main"), names.join());
  const health = await new MemseekClient(live!.url).health();  // no key needed
  assert.equal(health.db, true);
  const schema = await memseek.openapi() as { paths: Record<string, unknown> };
  assert.ok("/records" in schema.paths);
});

test("a wrong key is Unauthorized with the envelope's code", { skip }, async () => {
  const stranger = new MemseekClient(live!.url, { apiKey: "not-a-key" });
  await assert.rejects(stranger.tools(), (error: unknown) =>
    error instanceof Unauthorized && error.status === 401 && typeof error.code === "string" && error.code !== ""
    && error.detail !== "");
  await assert.rejects(new MemseekClient(live!.url).timeline({ entity: ENTITY }), Unauthorized);
});

test("another workspace's record is NotFound; a malformed id is Unprocessable at path id", { skip }, async () => {
  const [mine] = (await memseek.writeRecords([{ entity: ENTITY, collection: "main", type: "note",
                                                  text: "mine" }])).inserted;
  const other = liveClient(live!, { apiKey: live!.otherKey });
  await assert.rejects(other.getRecord(mine.id), (error: unknown) =>
    error instanceof NotFound && error.status === 404 && error.code === "record_not_found");
  await assert.rejects(other.approveRecord(mine.id), NotFound);
  await assert.rejects(memseek.getRecord("not-a-uuid"), (error: unknown) =>
    error instanceof Unprocessable && error.code === "invalid_id" && error.path === "id");
  // An id is one path segment whatever it holds: never another route's answer, never a 5xx.
  for (const hostile of ["../health", "..", "%2e%2e", "00000000-0000-4000-8000-000000000000?x=1", "\u0000", "a#b"]) {
    await assert.rejects(memseek.getRecord(hostile), (error: unknown) =>
      (error instanceof Unprocessable || error instanceof NotFound) && error.code !== "", hostile);
  }
});

test("a rejected batch names the offending value's path and writes nothing", { skip }, async () => {
  const entity = "contact.ts-batch";
  await assert.rejects(memseek.writeRecords([
    { entity, collection: "main", type: "note", text: "fine" },
    { entity, collection: "nope", type: "note", text: "bad" },
  ]), (error: unknown) => error instanceof Unprocessable && error.status === 422
    && error.code === "unknown_collection" && error.path === "records[1].collection"
    && error.message.endsWith("(at records[1].collection)"));
  assert.deepEqual((await memseek.timeline({ entity })).records, []);
  await assert.rejects(memseek.timeline({ entity, limit: 0 }), (error: unknown) =>
    error instanceof Unprocessable && error.path === "limit");
});

test("the consistency token of a write goes out with the next read, and the server accepts it", { skip }, async () => {
  const { fetch, sent } = recordingFetch();
  const client = liveClient(live!, { fetch });
  assert.equal(client.consistencyToken, null);
  await client.collections();
  assert.equal(sent[0].headers.get("Memseek-Consistency-Token"), null);
  const [written] = (await client.writeRecords([{ entity: ENTITY, collection: "main", type: "note",
                                                  text: "read me back" }])).inserted;
  const token = client.consistencyToken;
  assert.match(token ?? "", /^[0-9A-F]+\/[0-9A-F]+$/);
  const read = await client.getRecord(written.id);
  assert.equal((read.content as { text: string }).text, "read me back");
  assert.deepEqual(sent.map(({ method }) => method), ["GET", "POST", "GET"]);
  assert.equal(sent[2].headers.get("Memseek-Consistency-Token"), token);
  // A token carried by hand to a new client: the server reads it as a position, not as garbage.
  const carried = liveClient(live!);
  carried.consistencyToken = token;
  assert.equal((await carried.getRecord(written.id)).id, written.id);
  carried.consistencyToken = "not-a-position";
  await assert.rejects(carried.getRecord(written.id), (error: unknown) =>
    error instanceof Error && (error as { code?: string }).code === "invalid_consistency_token");
});
