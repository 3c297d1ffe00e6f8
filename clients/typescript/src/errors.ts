/**
 * One error hierarchy for everything a call can fail with, as in the Python SDK (memseek_client).
 *
 * An HTTP error becomes the class of its status (`NotFound` for 404, ...), carrying the server's
 * error envelope: `code` (the stable snake_case `error`), `detail`, `path` (the dotted location of
 * the offending value, or `null`), `status` and any `extra` members. A status without a class of
 * its own falls back to `ClientError` (4xx) or `ServerError` (5xx). Failing to reach the server is
 * `ConnectionFailed`; running out of time is `Timeout`; a 2xx body that is not JSON is
 * `ResponseShapeError`; a call that cannot be made into a request at all (a header value with a
 * line break, a body JSON cannot hold, a base URL that is not one) is `InvalidRequest`, and nothing
 * is sent.
 */

export class MemseekError extends Error {
  readonly code: string;
  readonly detail: string;
  readonly path: string | null;
  readonly status: number | null;
  readonly extra: Readonly<Record<string, unknown>>;

  constructor(code: string, detail: string, path: string | null = null, status: number | null = null,
              extra: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    const message = `${code}: ${detail}` + (path ? ` (at ${path})` : "");
    super(status ? `${status} ${message}` : message, options);
    this.name = new.target.name;
    this.code = code;
    this.detail = detail;
    this.path = path;
    this.status = status;
    this.extra = Object.freeze({ ...extra });
  }
}

/** The server could not be reached (after the retries the policy allows). */
export class ConnectionFailed extends MemseekError {}

/** The request did not complete within the client's timeout. */
export class Timeout extends MemseekError {}

/** The call could not be made into an HTTP request; nothing was sent. */
export class InvalidRequest extends MemseekError {}

/** A successful response whose body is not the documented shape. */
export class ResponseShapeError extends MemseekError {}

/**
 * The server answered with an HTTP error status and (normally) the error envelope; `retryAfter`
 * is its `Retry-After` in seconds, when it sent one.
 */
export class ApiError extends MemseekError {
  declare readonly status: number;
  retryAfter: number | null = null;
}

/** A 4xx answer: the request is wrong, and sending it again will not help. */
export class ClientError extends ApiError {}
/** 400. */
export class BadRequest extends ClientError {}
/** 401: no key, or a key the service does not know. */
export class Unauthorized extends ClientError {}
/** 403: the key may not do this (or an `Origin` the server does not allow). */
export class Forbidden extends ClientError {}
/** 404: no such record, view, receipt or route in this workspace. */
export class NotFound extends ClientError {}
/** 405. */
export class MethodNotAllowed extends ClientError {}
/** 409: the request conflicts with stored state (a dedupe key, a stale draft, ...). */
export class Conflict extends ClientError {}
/** 413: the body exceeds the server's size limit. */
export class PayloadTooLarge extends ClientError {}
/** 415. */
export class UnsupportedMediaType extends ClientError {}
/** 422: the body or query string failed validation; `path` names the offending value. */
export class Unprocessable extends ClientError {}
/** 429: too many requests; idempotent calls were already retried after `Retry-After`. */
export class RateLimited extends ClientError {}
/** A 5xx answer. */
export class ServerError extends ApiError {}
/**
 * 503: a dependency (the database, the embedding model, a busy retrieval slot) is not available
 * right now; idempotent calls were already retried within the client's retry policy.
 */
export class Unavailable extends ServerError {}

type ApiErrorClass = new (code: string, detail: string, path: string | null, status: number,
                          extra: Record<string, unknown>) => ApiError;

export const STATUS_CLASSES: ReadonlyMap<number, ApiErrorClass> = new Map<number, ApiErrorClass>([
  [400, BadRequest], [401, Unauthorized], [403, Forbidden], [404, NotFound], [405, MethodNotAllowed],
  [409, Conflict], [413, PayloadTooLarge], [415, UnsupportedMediaType], [422, Unprocessable],
  [429, RateLimited], [503, Unavailable],
]);

/**
 * The error for an error response: its class from `status`, its fields from the envelope
 * `{"error", "detail", "path", ...}`. A body that is not an envelope (a proxy's HTML page, say)
 * keeps the status with the code `http_<status>` and the text as detail.
 */
export function errorFromResponse(status: number, body: string, retryAfter: number | null = null): ApiError {
  const cls = STATUS_CLASSES.get(status) ?? (status < 500 ? ClientError : ServerError);
  let envelope: unknown = null;
  try {
    envelope = JSON.parse(body);
  } catch {
    envelope = null;
  }
  let error: ApiError;
  if (isEnvelope(envelope)) {
    const { error: code, detail, path, ...extra } = envelope;
    error = new cls(code, String(detail ?? ""), typeof path === "string" ? path : null, status, extra);
  } else {
    error = new cls(`http_${status}`, body.slice(0, 500), null, status, {});
  }
  error.retryAfter = retryAfter;
  return error;
}

function isEnvelope(value: unknown): value is { error: string; detail?: unknown; path?: unknown } {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    && typeof (value as { error?: unknown }).error === "string";
}
