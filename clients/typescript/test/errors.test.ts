// The error model and the pure helpers: status → class, the envelope's fields, Retry-After,
// the backoff bounds, WAL positions and the query string.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ApiError, BadRequest, ClientError, Conflict, Forbidden, MemseekError, MethodNotAllowed, NotFound, PayloadTooLarge,
  RateLimited, RetryPolicy, ServerError, Unauthorized, Unavailable, Unprocessable, UnsupportedMediaType,
  errorFromResponse, parseRetryAfter, queryString, walPosition,
} from "../src/index.js";

const CLASSES: [number, Function][] = [
  [400, BadRequest], [401, Unauthorized], [403, Forbidden], [404, NotFound], [405, MethodNotAllowed],
  [409, Conflict], [413, PayloadTooLarge], [415, UnsupportedMediaType], [422, Unprocessable], [429, RateLimited],
  [503, Unavailable], [418, ClientError], [500, ServerError], [502, ServerError],
];

test("each status becomes its class, carrying the envelope's code, detail, path and extra members", () => {
  for (const [status, cls] of CLASSES) {
    const error = errorFromResponse(status, JSON.stringify({
      error: "some_code", detail: "what was wrong", path: "records[0].text", limit: 7 }), 2);
    assert.ok(error instanceof cls, `${status} is ${error.constructor.name}`);
    assert.ok(error instanceof ApiError && error instanceof MemseekError && error instanceof Error);
    assert.equal(error.name, (cls as { name: string }).name);
    assert.deepEqual([error.status, error.code, error.detail, error.path, error.retryAfter],
                     [status, "some_code", "what was wrong", "records[0].text", 2]);
    assert.deepEqual(error.extra, { limit: 7 });
    assert.equal(error.message, `${status} some_code: what was wrong (at records[0].text)`);
  }
  assert.ok(!(errorFromResponse(404, "{}") instanceof ServerError));
  assert.ok(!(errorFromResponse(503, "{}") instanceof ClientError));
});

test("a body that is not an envelope keeps the status with the code http_<status>", () => {
  for (const body of ["<html>Bad gateway</html>", '{"detail": "no error member"}', '["error"]', "", "null"]) {
    const error = errorFromResponse(502, body);
    assert.ok(error instanceof ServerError);
    assert.deepEqual([error.code, error.detail, error.path], ["http_502", body.slice(0, 500), null]);
  }
  assert.equal(errorFromResponse(404, JSON.stringify({ error: "x", detail: "y", path: 3 })).path, null);
  assert.equal(errorFromResponse(400, "x".repeat(2000)).detail.length, 500);
});

test("Retry-After is delta-seconds or an HTTP date; anything else is absent", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(parseRetryAfter(null), null);
  assert.equal(parseRetryAfter("7"), 7);
  assert.equal(parseRetryAfter(" 0 "), 0);
  assert.equal(parseRetryAfter("Thu, 01 Jan 2026 00:00:30 GMT", now), 30);
  assert.equal(parseRetryAfter("Wed, 31 Dec 2025 00:00:00 GMT", now), 0);
  assert.equal(parseRetryAfter("soon", now), null);
  assert.equal(parseRetryAfter("-3", now), null);
});

test("the backoff waits Retry-After when given, else a full-jitter draw within its bound, and stops at attempts", () => {
  const policy = new RetryPolicy({ attempts: 4, backoffBaseMs: 100, backoffMaxMs: 250, maxRetryAfterMs: 5000 });
  assert.equal(policy.delayMs(1, null, () => 0.5), 50);
  assert.equal(policy.delayMs(2, null, () => 0.999), 0.999 * 200);
  assert.equal(policy.delayMs(3, null, () => 1), 250);
  assert.equal(policy.delayMs(4, null, () => 0.5), null);
  assert.equal(policy.delayMs(1, 3, () => 0.5), 3000);
  assert.equal(policy.delayMs(1, 6, () => 0.5), null);
  assert.throws(() => new RetryPolicy({ attempts: 0 }), RangeError);
  assert.throws(() => new RetryPolicy({ backoffBaseMs: -1 }), RangeError);
});

test("WAL positions compare as PostgreSQL's LSNs; anything else is not a position", () => {
  assert.equal(walPosition("0/3A1F2B8"), 0x3a1f2b8n);
  assert.equal(walPosition("1/0"), 1n << 32n);
  assert.ok((walPosition("1/0") as bigint) > (walPosition("0/FFFFFFFF") as bigint));
  for (const bad of ["garbage", "0/", "/1", "1/2/3", "0/-1", "0/G"]) {
    assert.equal(walPosition(bad), null, bad);
  }
});

test("the query string drops unset members, joins lists with commas and encodes what needs it", () => {
  assert.equal(queryString(undefined), "");
  assert.equal(queryString({ a: undefined, b: null }), "");
  assert.equal(queryString({ entity: "contact.ada & co", limit: 3, include_system: false, types: ["note", "fact"] }),
               "?entity=contact.ada+%26+co&limit=3&include_system=false&types=note%2Cfact");
  assert.equal(queryString({ before: new Date("2026-05-01T09:00:00Z") }), "?before=2026-05-01T09%3A00%3A00.000Z");
});
