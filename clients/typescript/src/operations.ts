/**
 * Every operation of the OpenAPI document (docs/openapi.json), keyed by its `operationId`: the
 * HTTP method and path template the client sends (from the document, through the generated
 * `operationRoutes`), and whether the client may send it twice.
 *
 * The request and response types come from `openapi.ts`, generated from the same document by
 * `npm run generate`; a test fails when that file is not what the generator writes today.
 *
 * `idempotent` says a repeat changes nothing the caller sees: every GET, and the POST routes in
 * `READ_ONLY_POSTS`, which only read. Only these are retried (see `retry.ts`). `POST /retrieve` is
 * not among them: each call stores a receipt of its own. A DELETE is not retried either: had the
 * first attempt been applied, the repeat would report a 404 for a delete that succeeded.
 */
import { type components, type operations, operationRoutes } from "./openapi.js";

export type OperationId = keyof operations;
export type Schemas = components["schemas"];

export interface OperationSpec {
  readonly method: string;
  readonly path: string;
  readonly idempotent: boolean;
}

export const READ_ONLY_POSTS: ReadonlySet<OperationId> = new Set<OperationId>([
  "search_create", "search_lexical_create", "views_query_create", "memory_search_create", "evaluate_create",
]);

export const OPERATIONS = Object.fromEntries(Object.entries(operationRoutes).map(([id, route]) => [id, {
  ...route, idempotent: route.method === "GET" || READ_ONLY_POSTS.has(id as OperationId),
}])) as { readonly [Id in OperationId]: OperationSpec };

/** The JSON request body of an operation (`never` when it takes none). */
export type RequestBody<Id extends OperationId> =
  operations[Id] extends { requestBody: { content: { "application/json": infer B } } } ? B
    : operations[Id] extends { requestBody?: { content: { "application/json": infer B } } } ? B
      : never;

/** The query-string parameters of an operation (`never` when it takes none). */
export type QueryParams<Id extends OperationId> =
  operations[Id]["parameters"] extends { query?: infer Q } ? Exclude<Q, undefined> : never;

/** The path parameters of an operation (`never` when it takes none). */
export type PathParams<Id extends OperationId> =
  operations[Id]["parameters"] extends { path: infer P } ? Exclude<P, undefined> : never;

/** What a 200 (else 201) answer of an operation decodes to. */
export type Result<Id extends OperationId> =
  operations[Id]["responses"] extends { 200: { content: { "application/json": infer R } } } ? R
    : operations[Id]["responses"] extends { 201: { content: { "application/json": infer R } } } ? R
      : never;
