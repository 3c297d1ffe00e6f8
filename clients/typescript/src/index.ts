export { MemseekClient, METHOD_OF_OPERATION, type JsonRpcMessage } from "./client.js";
export * from "./errors.js";
export { OPERATIONS, READ_ONLY_POSTS, type OperationId, type QueryParams, type RequestBody, type Result, type Schemas } from "./operations.js";
export { RETRY_STATUSES, RetryPolicy, type RetryOptions, parseRetryAfter } from "./retry.js";
export { CONSISTENCY_HEADER, type ClientOptions, USER_AGENT, queryString, walPosition } from "./transport.js";
export type { components, operations, paths } from "./openapi.js";
