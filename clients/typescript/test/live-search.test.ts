// Search, views, context, retrieval with receipts and feedback, evaluation, tools and MCP
// through the SDK against the live server.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { Conflict, MemseekClient, NotFound, Unprocessable } from "../src/index.js";
import { liveClient, liveServer, NO_LIVE_SERVER } from "./support.js";

const live = liveServer();
const skip = live === null ? NO_LIVE_SERVER : false;
const ENTITY = "contact.ts-maria";
const TEXTS = ["Maria moved the budget review to Tuesday.", "Maria's daughter started school in Lyon.",
               "The quarterly budget was approved by finance.", "Maria renewed the support contract for two years."];
let memseek: MemseekClient;
let ids: string[];

before(async () => {
  if (live !== null) {
    memseek = liveClient(live);
    ids = (await memseek.writeRecords(TEXTS.map((text) => ({ entity: ENTITY, collection: "main", type: "note",
                                                             text })))).inserted.map(({ id }) => id);
  }
});

test("POST /search and GET /search find the written records; a bad spec names its path", { skip }, async () => {
  const response = await memseek.search({ q: "daughter school Lyon", mode: "text", scope: { entities: [ENTITY] },
                                          k: 2, include: ["text", "entity"] });
  assert.deepEqual(response.hits.map(({ id }) => id), [ids[1]]);
  assert.equal(response.hits[0].rank, 1);
  const got = await memseek.searchGet({ q: "quarterly budget finance", entity: ENTITY, k: 1 });
  assert.deepEqual(got.hits.map(({ id }) => id), [ids[2]]);
  await assert.rejects(memseek.search({ q: "budget", mode: "sideways" as "text" }), (error: unknown) =>
    error instanceof Unprocessable && error.path === "mode");
});

test("the lexical scan scores the records holding the words", { skip }, async () => {
  const response = await memseek.lexicalSearch({ contract_version: 1, mode: "lexical", scope: { entities: [ENTITY] },
                                                 query: { text: "budget", limit: 10 } });
  assert.deepEqual(response.page.hits.map(({ record }) => record.id).sort(), [ids[0], ids[2]].sort());
  assert.ok(response.page.hits.every(({ score }) => score > 0));
});

test("views are listed and queried; an unknown view is NotFound; a missing parameter names itself", { skip },
     async () => {
  const views = await memseek.views();
  assert.ok(JSON.stringify(views).includes("customer_context"));
  const result = await memseek.queryView("customer_context", { entity: ENTITY, task: "budget review", k: 3 });
  assert.ok(result.input_record_ids.length > 0 && result.input_record_ids.every((id) => ids.includes(id)));
  await assert.rejects(memseek.queryView("no_such_view", {}), NotFound);
  await assert.rejects(memseek.queryView("customer_context", { entity: ENTITY }), (error: unknown) =>
    error instanceof Unprocessable && error.path === "task");
  const schema = await memseek.rankSchema();
  assert.ok(JSON.stringify(schema).includes("bm25"));
});

test("context fits its budget; retrieve stores a receipt that takes feedback once per dedupe key", { skip },
     async () => {
  const context = await memseek.context({ entity: ENTITY, task: "the support contract", budget: 500,
                                          collections: "main" });
  assert.ok(context.tokens <= 500 && context.budget === 500 && context.input_record_ids.length > 0);
  assert.ok(context.rendered.includes("contract"));
  const memory = await memseek.retrieve({ query: "support contract renewal", entity: ENTITY, tokenBudget: 1000,
                                          raw: true });
  const delivered = [...memory.sections.events, ...memory.sections.facts].map(({ id }) => id);
  assert.ok(delivered.includes(ids[3]), JSON.stringify(memory.sections));
  const receipt = await memseek.receipt(memory.receiptId);
  assert.equal(receipt.id, memory.receiptId);
  const feedback = await memseek.sendFeedback(memory.receiptId, { outcome: "success", recordIds: [ids[3]],
                                                                  dedupeKey: "ts-run-1" });
  assert.equal(feedback.deduplicated, false);
  const again = await memseek.sendFeedback(memory.receiptId, { outcome: "success", recordIds: [ids[3]],
                                                               dedupeKey: "ts-run-1" });
  assert.equal(again.deduplicated, true);
  await assert.rejects(memseek.sendFeedback(memory.receiptId, { outcome: "failure", recordIds: [ids[3]],
                                                                dedupeKey: "ts-run-1" }), Conflict);
  const other = liveClient(live!, { apiKey: live!.otherKey });
  await assert.rejects(other.receipt(memory.receiptId), (error: unknown) =>
    error instanceof NotFound && error.code === "receipt_not_found");
});

test("evaluate scores graded queries", { skip }, async () => {
  const evaluation = await memseek.evaluate({ queries: [{ query: "daughter school Lyon", entity: ENTITY,
                                                          relevant: { [ids[1]]: 2 } }], k: 3 });
  assert.equal(evaluation.k, 3);
  assert.equal((evaluation.overall as { mrr: number }).mrr, 1);
});

test("tools lists the example declaration and MCP answers its JSON-RPC", { skip }, async () => {
  const listing = await memseek.tools();
  const names = listing.tools.map(({ name }) => name);
  assert.ok(names.includes("search_memory") && names.includes("remember"), names.join());
  const answer = await memseek.mcp({ jsonrpc: "2.0", id: 1, method: "initialize", params: {
    protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "memseek-ts-test", version: "1" } } });
  assert.ok(answer !== null);
  assert.deepEqual([answer.jsonrpc, answer.id], ["2.0", 1]);
  assert.ok(typeof answer.result === "object" && answer.result !== null && "serverInfo" in answer.result,
            JSON.stringify(answer));
  await assert.rejects(new MemseekClient(live!.url, { apiKey: "wrong" }).mcp({ jsonrpc: "2.0", id: 2, method: "ping" }),
                       (error: unknown) => error instanceof Error && (error as { status?: number }).status === 401);
});
