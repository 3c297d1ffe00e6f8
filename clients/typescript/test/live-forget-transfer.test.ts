// Erasure and transfer against the live server: deleteRecord and eraseEntity (dry runs count and
// change nothing), exportLines (JSON Lines decoded, resumable by a line's cursor) and importLines
// (a remapped copy; importing twice changes nothing).
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { MemseekClient, MemseekError, NotFound, Unprocessable } from "../src/index.js";
import { liveClient, liveServer, NO_LIVE_SERVER } from "./support.js";

const live = liveServer();
const skip = live === null ? NO_LIVE_SERVER : false;
let memseek: MemseekClient;

before(async () => {
  if (live !== null) {
    memseek = liveClient(live);
  }
});

async function writeNotes(entity: string, texts: string[]): Promise<string[]> {
  const written = await memseek.writeRecords(texts.map((text) => ({ entity, collection: "main", type: "note", text })));
  return written.inserted.map(({ id }) => id);
}

test("deleteRecord: a dry run counts and keeps the record; the delete removes it; a second is NotFound",
     { skip }, async () => {
  const [id] = await writeNotes("contact.ts-forget-one", ["Grace keeps the spare keys."]);
  const dry = await memseek.deleteRecord(id, { dry_run: true });
  assert.equal(dry.dry_run, true);
  assert.equal(dry.audit_id, null);
  assert.equal(dry.counts.records, 1);
  assert.equal((await memseek.getRecord(id)).id, id);
  const done = await memseek.deleteRecord(id);
  assert.equal(done.dry_run, false);
  assert.equal(done.counts.records, 1);
  assert.equal(typeof done.audit_id, "number");
  await assert.rejects(memseek.getRecord(id), NotFound);
  await assert.rejects(memseek.deleteRecord(id), (error: unknown) => error instanceof NotFound && error.status === 404);
});

test("eraseEntity: every record of the entity goes; an unknown key is Unprocessable at its path", { skip }, async () => {
  const entity = "contact.ts-forget-all";
  const ids = await writeNotes(entity, ["Linus plays the cello.", "Linus moved to Oslo."]);
  assert.equal((await memseek.eraseEntity({ entity, dry_run: true })).counts.records, 2);
  assert.equal((await memseek.timeline({ entity })).records.length, 2);
  assert.equal((await memseek.eraseEntity({ entity })).counts.records, 2);
  assert.deepEqual((await memseek.timeline({ entity })).records, []);
  for (const id of ids) {
    await assert.rejects(memseek.getRecord(id), NotFound);
  }
  await assert.rejects(memseek.eraseEntity({ entity, colection: "main" } as never), (error: unknown) =>
    error instanceof Unprocessable && error.path === "colection");
});

test("exportLines decodes the JSON Lines, resumes after a line's cursor, and importLines copies idempotently",
     { skip }, async () => {
  const entity = "contact.ts-transfer";
  const ids = await writeNotes(entity, ["Ines fixed the boiler.", "Ines ordered new pipes."]);
  const lines = await memseek.exportLines({ entity });
  assert.deepEqual([lines[0].kind, lines[lines.length - 1].kind], ["header", "end"]);
  const records = lines.filter((line) => line.kind === "record");
  assert.deepEqual(records.map((line) => line.id), ids);
  const middle = lines[lines.length - 3];
  const rest = await memseek.exportLines({ entity, cursor: middle.cursor as string });
  assert.deepEqual(rest, lines.slice(lines.length - 2));
  const text = lines.map((line) => JSON.stringify(line)).join("\n") + "\n";
  // Into the same workspace, so the copy takes new ids and seqs; a second import finds it all there.
  const first = await memseek.importLines(text, { ids: "remap", seqs: "renumber" });
  assert.equal(first.records_added, 2);
  const again = await memseek.importLines(text, { ids: "remap", seqs: "renumber" });
  assert.deepEqual([again.records_added, again.records_unchanged, again.definitions_added], [0, 2, 0]);
  await assert.rejects(memseek.importLines("{not json\n"), (error: unknown) =>
    error instanceof MemseekError && error.status === 422 || error instanceof MemseekError && error.status === 400);
});
