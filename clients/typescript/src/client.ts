/**
 * `MemseekClient`: one method per operation of the OpenAPI document, each typed by the generated
 * request and response types. A GET takes its query string as an object (members left undefined
 * are not sent, so the server's defaults apply; a list is sent comma-separated); a POST takes its
 * JSON body. Every failure is a `MemseekError` (errors.ts).
 *
 * ```ts
 * const memseek = new MemseekClient("http://127.0.0.1:8000", { apiKey: KEY });
 * const page = await memseek.timeline({ entity: "contact.maria" });
 * ```
 */
import type { OperationId, PathParams, QueryParams, RequestBody, Result, Schemas } from "./operations.js";
import { walk } from "./pages.js";
import { type ClientOptions, Transport } from "./transport.js";

type Item<Id extends OperationId, Member extends keyof Result<Id>> =
  Result<Id>[Member] extends readonly (infer I)[] ? I : never;

/** A JSON-RPC message answered by `POST /mcp`. */
export type JsonRpcMessage = Schemas["JsonRpcMessage"];

export class MemseekClient extends Transport {
  constructor(baseUrl: string, options: ClientOptions = {}) {
    super(baseUrl, options);
  }

  private get<Id extends OperationId>(id: Id, query?: QueryParams<Id>,
                                      path?: PathParams<Id> & Record<string, string>) {
    return this.call(id, { query, path });
  }

  private post<Id extends OperationId>(id: Id, body?: RequestBody<Id>,
                                       path?: PathParams<Id> & Record<string, string>) {
    return this.call(id, { body, path });
  }

  // --- service ---------------------------------------------------------------------------

  /** `GET /health` (no key needed). A 503 throws `Unavailable`. */
  health(): Promise<Result<"health_retrieve">> {
    return this.get("health_retrieve");
  }

  /** `GET /api/schema/`: the server's OpenAPI document, as plain JSON. */
  async openapi(): Promise<Record<string, unknown>> {
    return (await this.send("GET", "/api/schema/", true, { query: { format: "json" } })) as Record<string, unknown>;
  }

  // --- records ---------------------------------------------------------------------------

  /** `POST /records`: one atomic batch (1–100 records). */
  writeRecords(records: Schemas["RecordInputRequest"][]): Promise<Result<"records_create">> {
    return this.post("records_create", { records });
  }

  /** `GET /records/{id}` (`NotFound` for another workspace's id too). */
  getRecord(id: string): Promise<Result<"record_get">> {
    return this.get("record_get", undefined, { id });
  }

  /** `DELETE /records/{id}`: hard delete of the record, its versions and what derives from it
   * (`dry_run: true` counts and changes nothing). Sent once: a delete is never retried. */
  deleteRecord(id: string, query: QueryParams<"record_delete"> = {}): Promise<Result<"record_delete">> {
    return this.call("record_delete", { path: { id }, query });
  }

  /** `POST /erase`: hard delete of every record of one entity (`dry_run` counts only). */
  eraseEntity(request: RequestBody<"entity_erase">): Promise<Result<"entity_erase">> {
    return this.post("entity_erase", request);
  }

  /**
   * `GET /export`: the workspace (or one entity) as JSON Lines, one decoded value per line (header,
   * definitions, records, end). `cursor` (a line's own) resumes after that line.
   */
  async exportLines(query: QueryParams<"workspace_export"> = {}): Promise<Record<string, unknown>[]> {
    return (await this.call("workspace_export", { query, answer: "lines" })) as unknown as Record<string, unknown>[];
  }

  /** `POST /import`: an export's JSON Lines (as text), written in one transaction; importing twice changes nothing. */
  importLines(lines: string, query: QueryParams<"workspace_import"> = {}): Promise<Result<"workspace_import">> {
    return this.call("workspace_import", { query, text: { body: lines, contentType: "application/x-ndjson" } });
  }

  /** `POST /records/{id}/approve`: write the active successor of a draft. */
  approveRecord(id: string): Promise<Result<"record_approve">> {
    return this.post("record_approve", undefined, { id });
  }

  /** `POST /records/{id}/reject`: withdraw a draft. */
  rejectRecord(id: string): Promise<Result<"record_reject">> {
    return this.post("record_reject", undefined, { id });
  }

  // --- reads -----------------------------------------------------------------------------

  /** `GET /timeline`: one page of an entity's records, newest first. */
  timeline(query: QueryParams<"timeline_list">): Promise<Result<"timeline_list">> {
    return this.get("timeline_list", query);
  }

  /** `GET /document`: an entity's current named facts. */
  document(query: QueryParams<"document_get">): Promise<Result<"document_get">> {
    return this.get("document_get", query);
  }

  /** `GET /document/history`: one page of a fact's versions. */
  documentHistory(query: QueryParams<"document_history_list">): Promise<Result<"document_history_list">> {
    return this.get("document_history_list", query);
  }

  /** `GET /collections`: every loaded collection version. */
  collections(): Promise<Result<"collection_list">> {
    return this.get("collection_list");
  }

  // --- search and views ------------------------------------------------------------------

  /** `POST /search` with a SearchSpec. */
  search(spec: RequestBody<"search_create">): Promise<Result<"search_create">> {
    return this.post("search_create", spec);
  }

  /** `GET /search`: the query-string form. */
  searchGet(query: QueryParams<"search_retrieve">): Promise<Result<"search_retrieve">> {
    return this.get("search_retrieve", query);
  }

  /** `POST /search/lexical`: exact BM25 over one source-row scan. */
  lexicalSearch(request: RequestBody<"search_lexical_create">): Promise<Result<"search_lexical_create">> {
    return this.post("search_lexical_create", request);
  }

  /** `GET /views`: every loaded view version and its input contract. */
  views(): Promise<Result<"views_retrieve">> {
    return this.get("views_retrieve");
  }

  /** `POST /views/{name}/query` with the view's parameters. */
  queryView(name: string, parameters: RequestBody<"views_query_create"> = {}): Promise<Result<"views_query_create">> {
    return this.post("views_query_create", parameters, { name });
  }

  /** `GET /rank/schema`. */
  rankSchema(): Promise<Result<"rank_schema_retrieve">> {
    return this.get("rank_schema_retrieve");
  }

  // --- context and retrieval -------------------------------------------------------------

  /** `GET /context`: token-budgeted context for an entity and a task. */
  context(query: QueryParams<"context_retrieve">): Promise<Result<"context_retrieve">> {
    return this.get("context_retrieve", query);
  }

  /** `POST /retrieve`: one token-budgeted memory context with a `receipt_id` (never retried). */
  retrieve(request: RequestBody<"retrieve_create">): Promise<Result<"retrieve_create">> {
    return this.post("retrieve_create", request);
  }

  /** `GET /receipts/{id}`: what one retrieval delivered. */
  receipt(receiptId: string): Promise<Result<"receipts_retrieve">> {
    return this.get("receipts_retrieve", undefined, { id: receiptId });
  }

  /** `POST /receipts/{id}/feedback`: an outcome for delivered records. */
  sendFeedback(receiptId: string,
               feedback: RequestBody<"receipts_feedback_create">): Promise<Result<"receipts_feedback_create">> {
    return this.post("receipts_feedback_create", feedback, { id: receiptId });
  }

  /** `POST /evaluate`: recall@k, nDCG@k and MRR for graded queries (no side effects). */
  evaluate(request: RequestBody<"evaluate_create">): Promise<Result<"evaluate_create">> {
    return this.post("evaluate_create", request);
  }

  // --- MCP ---------------------------------------------------------------------------------

  /** `GET /tools`: the active MCP declaration's tools, with their routes and schemas. */
  tools(): Promise<Result<"tools_retrieve">> {
    return this.get("tools_retrieve");
  }

  /**
   * `POST /mcp`: one JSON-RPC message; the server's JSON-RPC answer, or `null` for a notification
   * (202). A JSON-RPC error inside a 200 is returned, not thrown: it is the protocol's answer.
   */
  async mcp(message: RequestBody<"mcp_create">): Promise<JsonRpcMessage | null> {
    return (await this.call("mcp_create", {
      body: message, headers: { Accept: "application/json, text/event-stream" },
    })) as JsonRpcMessage | null;
  }

  // --- the memory brief and lookups ------------------------------------------------------

  /** `POST /memory/search`: the brief (no `scope`, no `after`) or the ranked list. */
  memorySearch(request: RequestBody<"memory_search_create">): Promise<Result<"memory_search_create">> {
    return this.post("memory_search_create", request);
  }

  /** `GET /memory/grep`: passages containing an exact phrase, newest first. */
  memoryGrep(query: QueryParams<"memory_grep_retrieve">): Promise<Result<"memory_grep_retrieve">> {
    return this.get("memory_grep_retrieve", query);
  }

  /** `GET /memory/latest`: the newest passages under a path, or those between two dates. */
  memoryLatest(query: QueryParams<"memory_latest_retrieve"> = {}): Promise<Result<"memory_latest_retrieve">> {
    return this.get("memory_latest_retrieve", query);
  }

  /** `GET /memory/around`: the passages either side of one, in the same conversation. */
  memoryAround(query: QueryParams<"memory_around_retrieve">): Promise<Result<"memory_around_retrieve">> {
    return this.get("memory_around_retrieve", query);
  }

  /** `GET /memory/read`: one passage or fact, whole, by path. */
  memoryRead(query: QueryParams<"memory_read_retrieve">): Promise<Result<"memory_read_retrieve">> {
    return this.get("memory_read_retrieve", query);
  }

  /** `GET /memory/ls`: what exists under a path, with counts. */
  memoryLs(query: QueryParams<"memory_ls_retrieve"> = {}): Promise<Result<"memory_ls_retrieve">> {
    return this.get("memory_ls_retrieve", query);
  }

  /** `GET /memory/history`: every value of one fact, oldest first. */
  memoryHistory(query: QueryParams<"memory_history_retrieve">): Promise<Result<"memory_history_retrieve">> {
    return this.get("memory_history_retrieve", query);
  }

  // --- iterators: each follows the route's own cursor until the server says there is no more

  /** Every record of `timeline(query)`, newest first (`before_seq` follows `next_before_seq`). */
  iterTimeline(query: QueryParams<"timeline_list">): AsyncGenerator<Item<"timeline_list", "records">, void, undefined> {
    return walk((q) => this.timeline(q), query, (page) => page.records, (page) => page.next_before_seq, "before_seq");
  }

  /** Every version of one fact, newest first. */
  iterDocumentHistory(query: QueryParams<"document_history_list">):
    AsyncGenerator<Item<"document_history_list", "versions">, void, undefined> {
    return walk((q) => this.documentHistory(q), query, (page) => page.versions, (page) => page.next_before_seq,
                "before_seq");
  }

  /** Every passage `memoryGrep(query)` finds, newest first. */
  iterMemoryGrep(query: QueryParams<"memory_grep_retrieve">):
    AsyncGenerator<Item<"memory_grep_retrieve", "hits">, void, undefined> {
    return walk((q) => this.memoryGrep(q), query, (page) => page.hits, (page) => page.next_cursor, "cursor");
  }

  /** Every passage `memoryLatest(query)` lists, newest first. */
  iterMemoryLatest(query: QueryParams<"memory_latest_retrieve"> = {}):
    AsyncGenerator<Item<"memory_latest_retrieve", "hits">, void, undefined> {
    return walk((q) => this.memoryLatest(q), query, (page) => page.hits, (page) => page.next_cursor, "cursor");
  }

  /** Every entry under a path. */
  iterMemoryLs(query: QueryParams<"memory_ls_retrieve"> = {}):
    AsyncGenerator<Item<"memory_ls_retrieve", "entries">, void, undefined> {
    return walk((q) => this.memoryLs(q), query, (page) => page.entries, (page) => page.next_cursor, "cursor");
  }

  /** Every version of one fact, oldest first. */
  iterMemoryHistory(query: QueryParams<"memory_history_retrieve">):
    AsyncGenerator<Item<"memory_history_retrieve", "versions">, void, undefined> {
    return walk((q) => this.memoryHistory(q), query, (page) => page.versions, (page) => page.next_cursor, "cursor");
  }

  /**
   * Each page of a lexical scan, following `page.next_after` until the scope is scanned. Scores
   * rank hits within their page only: do not merge them across pages.
   */
  async *iterLexicalPages(request: RequestBody<"search_lexical_create">):
    AsyncGenerator<Result<"search_lexical_create">, void, undefined> {
    let current = request;
    for (;;) {
      const response = await this.lexicalSearch(current);
      yield response;
      if (response.page.next_after === null) {
        return;
      }
      current = { ...current, query: { ...current.query, after: response.page.next_after } };
    }
  }
}

/** Which `MemseekClient` method sends each operation of the document. */
export const METHOD_OF_OPERATION: { readonly [Id in OperationId]: keyof MemseekClient } = {
  health_retrieve: "health",
  records_create: "writeRecords",
  record_get: "getRecord",
  record_delete: "deleteRecord",
  entity_erase: "eraseEntity",
  workspace_export: "exportLines",
  workspace_import: "importLines",
  record_approve: "approveRecord",
  record_reject: "rejectRecord",
  timeline_list: "timeline",
  document_get: "document",
  document_history_list: "documentHistory",
  collection_list: "collections",
  search_create: "search",
  search_retrieve: "searchGet",
  search_lexical_create: "lexicalSearch",
  views_retrieve: "views",
  views_query_create: "queryView",
  rank_schema_retrieve: "rankSchema",
  context_retrieve: "context",
  retrieve_create: "retrieve",
  receipts_retrieve: "receipt",
  receipts_feedback_create: "sendFeedback",
  evaluate_create: "evaluate",
  tools_retrieve: "tools",
  mcp_create: "mcp",
  memory_search_create: "memorySearch",
  memory_grep_retrieve: "memoryGrep",
  memory_latest_retrieve: "memoryLatest",
  memory_around_retrieve: "memoryAround",
  memory_read_retrieve: "memoryRead",
  memory_ls_retrieve: "memoryLs",
  memory_history_retrieve: "memoryHistory",
};
