// `walk`, the cursor follower behind the iterators, on pages made in the test.
import assert from "node:assert/strict";
import { test } from "node:test";
import { walk } from "../src/pages.js";

interface Query {
  entity: string;
  cursor?: string;
}

interface Page {
  items: number[];
  next: string | null;
}

const START: Query = { entity: "e" };
const PAGES: Record<string, Page> = {
  start: { items: [1, 2], next: "b" },
  b: { items: [], next: "c" },
  c: { items: [3], next: null },
};

test("walk yields every page's items in order, sending each page's cursor with the next query", async () => {
  const asked: Query[] = [];
  const fetchPage = async (query: Query) => {
    asked.push(query);
    return PAGES[query.cursor ?? "start"];
  };
  const items: number[] = [];
  for await (const item of walk(fetchPage, START, (page) => page.items, (page) => page.next, "cursor")) {
    items.push(item);
  }
  assert.deepEqual(items, [1, 2, 3]);
  assert.deepEqual(asked, [{ entity: "e" }, { entity: "e", cursor: "b" }, { entity: "e", cursor: "c" }]);
});

test("walk stops asking when the consumer stops reading, and passes a page's error on", async () => {
  let asked = 0;
  const fetchPage = async (query: Query) => {
    asked += 1;
    if (query.cursor === "c") {
      throw new Error("page c failed");
    }
    return PAGES[query.cursor ?? "start"];
  };
  for await (const item of walk(fetchPage, START, (page) => page.items, (page) => page.next, "cursor")) {
    assert.equal(item, 1);
    break;
  }
  assert.equal(asked, 1);
  const reading = async () => {
    for await (const _ of walk(fetchPage, START, (page) => page.items, (page) => page.next, "cursor")) {
      // read on
    }
  };
  await assert.rejects(reading(), /page c failed/);
});
