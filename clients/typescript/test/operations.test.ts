// The SDK against the OpenAPI document: every operation has a method, sent with the document's
// method and path; only reads are marked idempotent; src/openapi.ts is what the generator writes
// from the checked-in document today.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { MemseekClient, METHOD_OF_OPERATION, OPERATIONS } from "../src/index.js";
// @ts-expect-error: a plain ES module without declarations, run as the package's `generate` script
import { DOCUMENT, OUTPUT, generate } from "../../scripts/generate.mjs";

interface Operation {
  operationId: string;
}

const document = JSON.parse(readFileSync(DOCUMENT as string, "utf8")) as {
  paths: Record<string, Record<string, Operation>>;
};
const listed = Object.entries(document.paths).flatMap(([path, operations]) => Object.entries(operations)
  .filter(([method]) => ["get", "post", "put", "patch", "delete"].includes(method))
  .map(([method, operation]) => ({ id: operation.operationId, method: method.toUpperCase(), path })));

test("every operation of the document has a method of the client, sent with the document's method and path", () => {
  assert.ok(listed.length > 20);
  for (const { id, method, path } of listed) {
    const spec = (OPERATIONS as Record<string, { method: string; path: string }>)[id];
    assert.ok(spec, `${method} ${path} (${id}) has no entry in OPERATIONS`);
    assert.deepEqual([spec.method, spec.path], [method, path], id);
    const name = (METHOD_OF_OPERATION as Record<string, string>)[id];
    assert.equal(typeof (MemseekClient.prototype as unknown as Record<string, unknown>)[name], "function", id);
  }
  assert.deepEqual(Object.keys(OPERATIONS).sort(), listed.map(({ id }) => id).sort());
  const names = Object.values(METHOD_OF_OPERATION);
  assert.equal(new Set(names).size, names.length, "one method per operation");
});

test("every GET is idempotent, and the POSTs that write are not", () => {
  for (const spec of Object.values(OPERATIONS)) {
    if (spec.method === "GET") {
      assert.ok(spec.idempotent, spec.path);
    }
  }
  for (const id of ["records_create", "record_approve", "record_reject", "retrieve_create",
                    "receipts_feedback_create", "mcp_create"] as const) {
    assert.equal(OPERATIONS[id].idempotent, false, id);
  }
});

test("src/openapi.ts is what the generator writes from docs/openapi.json (run `npm run generate`)", async () => {
  assert.equal(readFileSync(OUTPUT as string, "utf8"), await generate());
});
