/**
 * Every operation of the OpenAPI document (docs/openapi.json), keyed by its `operationId`: the
 * HTTP method and path template the client sends, and whether the client may send it twice.
 *
 * The request and response types come from `openapi.ts`, generated from the same document by
 * `npm run generate`; `OPERATIONS` is typed by the generated `operations` interface, so a route
 * added to or removed from the document fails the build until this table (and a method on
 * `MemseekClient`) follows, and the test `operations.test.ts` checks method and path agree.
 *
 * `idempotent` says a repeat changes nothing the caller sees: every GET, and the POST routes that
 * only read. Only these are retried (see `retry.ts`). `POST /retrieve` is not among them: each
 * call stores a receipt of its own.
 */
import type { components, operations } from "./openapi.js";

export type OperationId = keyof operations;
export type Schemas = components["schemas"];

export interface OperationSpec {
  readonly method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  readonly path: string;
  readonly idempotent: boolean;
}

export const OPERATIONS: { readonly [Id in OperationId]: OperationSpec } = {
  health_retrieve: { method: "GET", path: "/health", idempotent: true },
  records_create: { method: "POST", path: "/records", idempotent: false },
  record_get: { method: "GET", path: "/records/{id}", idempotent: true },
  record_approve: { method: "POST", path: "/records/{id}/approve", idempotent: false },
  record_reject: { method: "POST", path: "/records/{id}/reject", idempotent: false },
  timeline_list: { method: "GET", path: "/timeline", idempotent: true },
  document_get: { method: "GET", path: "/document", idempotent: true },
  document_history_list: { method: "GET", path: "/document/history", idempotent: true },
  collection_list: { method: "GET", path: "/collections", idempotent: true },
  search_create: { method: "POST", path: "/search", idempotent: true },
  search_retrieve: { method: "GET", path: "/search", idempotent: true },
  search_lexical_create: { method: "POST", path: "/search/lexical", idempotent: true },
  views_retrieve: { method: "GET", path: "/views", idempotent: true },
  views_query_create: { method: "POST", path: "/views/{name}/query", idempotent: true },
  rank_schema_retrieve: { method: "GET", path: "/rank/schema", idempotent: true },
  context_retrieve: { method: "GET", path: "/context", idempotent: true },
  retrieve_create: { method: "POST", path: "/retrieve", idempotent: false },
  receipts_retrieve: { method: "GET", path: "/receipts/{id}", idempotent: true },
  receipts_feedback_create: { method: "POST", path: "/receipts/{id}/feedback", idempotent: false },
  evaluate_create: { method: "POST", path: "/evaluate", idempotent: true },
  tools_retrieve: { method: "GET", path: "/tools", idempotent: true },
  mcp_create: { method: "POST", path: "/mcp", idempotent: false },
  memory_search_create: { method: "POST", path: "/memory/search", idempotent: true },
  memory_grep_retrieve: { method: "GET", path: "/memory/grep", idempotent: true },
  memory_latest_retrieve: { method: "GET", path: "/memory/latest", idempotent: true },
  memory_around_retrieve: { method: "GET", path: "/memory/around", idempotent: true },
  memory_read_retrieve: { method: "GET", path: "/memory/read", idempotent: true },
  memory_ls_retrieve: { method: "GET", path: "/memory/ls", idempotent: true },
  memory_history_retrieve: { method: "GET", path: "/memory/history", idempotent: true },
};

/** The JSON request body of an operation (`never` when it takes none). */
export type RequestBody<Id extends OperationId> =
  operations[Id] extends { requestBody: { content: { "application/json": infer B } } } ? B
    : operations[Id] extends { requestBody?: { content: { "application/json": infer B } } } ? B
      : never;

/** The query-string parameters of an operation (`never` when it takes none). */
export type QueryParams<Id extends OperationId> =
  operations[Id]["parameters"] extends { query?: infer Q } ? Exclude<Q, undefined> : never;

/** What a 200 (else 201) answer of an operation decodes to. */
export type Result<Id extends OperationId> =
  operations[Id]["responses"] extends { 200: { content: { "application/json": infer R } } } ? R
    : operations[Id]["responses"] extends { 201: { content: { "application/json": infer R } } } ? R
      : never;
