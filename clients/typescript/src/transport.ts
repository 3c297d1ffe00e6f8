/**
 * How one operation becomes an HTTP request and its answer a value or an error: the key, the
 * consistency token, the retry loop and the error mapping. `MemseekClient` (client.ts) adds one
 * method per route on top.
 *
 * Read-your-writes (the server's docs/replicas.md): a write's response names its WAL position in
 * `Memseek-Consistency-Token`; the client keeps the latest one it saw and sends it with every
 * later request, so a read served by a replica waits for (or skips a replica without) what this
 * client wrote.
 */
import { ConnectionFailed, InvalidRequest, MemseekError, ResponseShapeError, Timeout, errorFromResponse } from "./errors.js";
import { OPERATIONS, type OperationId, type PathParams, type QueryParams, type RequestBody, type Result,
} from "./operations.js";
import { RETRY_STATUSES, RetryPolicy, type RetryOptions, parseRetryAfter } from "./retry.js";

export const USER_AGENT = "memseek-client-ts/0.1.0";
export const CONSISTENCY_HEADER = "Memseek-Consistency-Token";
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface ClientOptions {
  /** The workspace key, sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** Milliseconds each attempt may take (default 30000). */
  timeoutMs?: number;
  /** Bounds and pacing of retries (see retry.ts). */
  retry?: RetryOptions;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
  /** The fetch to send with (default: the global one), e.g. one that logs or goes through a proxy. */
  fetch?: typeof globalThis.fetch;
  /** The wait between attempts (default: a timer). */
  sleep?: (ms: number) => Promise<void>;
  /** The jitter's random source, drawing from [0, 1) (default Math.random). */
  random?: () => number;
}

/** What a call sends besides its operation: path parameters, query string and JSON body. */
export interface CallArgs {
  path?: Record<string, string>;
  query?: unknown;
  body?: unknown;
  headers?: Record<string, string>;
  /** A body sent as it is (JSON Lines, say) instead of `body` as JSON, with its content type. */
  text?: { body: string; contentType: string };
  /** `"lines"`: the 2xx answer is JSON Lines, decoded to one value per line. */
  answer?: "json" | "lines";
}

/** What operation `Id` sends besides its method and path, typed from the document. */
export interface OperationArgs<Id extends OperationId> extends CallArgs {
  path?: PathParams<Id> & Record<string, string>;
  query?: QueryParams<Id>;
  body?: RequestBody<Id>;
  headers?: Record<string, string>;
}

export class Transport {
  readonly baseUrl: string;
  readonly retry: RetryPolicy;
  /**
   * The latest WAL position a response named (`null` before the first); it goes out with every
   * request. Set it to carry a position from another client.
   */
  consistencyToken: string | null = null;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof globalThis.fetch;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;

  constructor(baseUrl: string, options: ClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.retry = new RetryPolicy(options.retry);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.fetchImpl = options.fetch ?? globalThis.fetch;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.random = options.random ?? Math.random;
    this.headers = { Accept: "application/json", "User-Agent": USER_AGENT, ...(options.headers ?? {}) };
    if (options.apiKey !== undefined) {
      this.headers.Authorization = `Bearer ${options.apiKey}`;
    }
  }

  /** Send operation `id`; its decoded 2xx body, or `null` for a 202 without one. */
  async call<Id extends OperationId>(id: Id, args: OperationArgs<Id> = {}): Promise<Result<Id>> {
    const spec = OPERATIONS[id];
    return (await this.send(spec.method, spec.path, spec.idempotent, args)) as Result<Id>;
  }

  /** Send `method path` (a template whose `{name}` parts `args.path` fills). */
  async send(method: string, template: string, idempotent: boolean, args: CallArgs = {}): Promise<unknown> {
    const path = fillPath(template, args.path ?? {});
    const where = `${method} ${path}`;
    const url = this.baseUrl + path + queryString(args.query);
    const body = args.text?.body ?? (args.body === undefined ? undefined : encodeBody(args.body, where));
    const contentType = args.text?.contentType ?? "application/json";
    for (let attempt = 1; ; attempt++) {
      const request = this.request(url, method, body, contentType, args.headers, where);
      let response: Response;
      try {
        response = await this.fetchImpl(request, { signal: AbortSignal.timeout(this.timeoutMs) });
      } catch (error) {
        const failure = transportFailure(error, where);
        const delay = idempotent && failure instanceof ConnectionFailed
          ? this.retry.delayMs(attempt, null, this.random) : null;
        if (delay === null) {
          throw failure;
        }
        await this.sleep(delay);
        continue;
      }
      this.rememberPosition(response.headers.get(CONSISTENCY_HEADER));
      const text = await readText(response, where);
      if (response.status < 400) {
        return args.answer === "lines" ? decodeLines(response.status, text) : decodeBody(response.status, text);
      }
      const retryAfter = parseRetryAfter(response.headers.get("Retry-After"));
      const delay = idempotent && RETRY_STATUSES.has(response.status)
        ? this.retry.delayMs(attempt, retryAfter, this.random) : null;
      if (delay === null) {
        throw errorFromResponse(response.status, text, retryAfter);
      }
      await this.sleep(delay);
    }
  }

  /** The request of one attempt (the consistency token is read afresh for each), checked before it is sent. */
  private request(url: string, method: string, body: string | undefined, contentType: string,
                  extra: Record<string, string> | undefined, where: string): Request {
    const headers: Record<string, string> = { ...this.headers, ...(extra ?? {}) };
    if (this.consistencyToken !== null) {
      headers[CONSISTENCY_HEADER] = this.consistencyToken;
    }
    if (body !== undefined) {
      headers["Content-Type"] = contentType;
    }
    try {
      return new Request(url, { method, headers, body });
    } catch (error) {
      throw new InvalidRequest("invalid_request", `${where}: ${(error as Error).message}`, null, null, {},
                               { cause: error });
    }
  }

  /** Keep the later of the response's consistency token and the one held. */
  private rememberPosition(token: string | null): void {
    const position = token === null ? null : walPosition(token);
    const held = this.consistencyToken === null ? null : walPosition(this.consistencyToken);
    if (position !== null && (held === null || position > held)) {
      this.consistencyToken = token;
    }
  }
}

/** A token (PostgreSQL's `X/Y` LSN) as a number to compare; `null` for anything else. */
export function walPosition(token: string): bigint | null {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(token);
  return match ? (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`) : null;
}

function fillPath(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) {
      throw new InvalidRequest("invalid_request", `${template}: the path parameter ${name} is missing`);
    }
    return encodeURIComponent(value);
  });
}

/** `?a=1&b=x,y`: members left undefined or null are not sent (the server's defaults apply). */
export function queryString(query: unknown): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries((query ?? {}) as object)) {
    if (value === undefined || value === null) {
      continue;
    }
    params.append(key, Array.isArray(value) ? value.map(String).join(",")
      : value instanceof Date ? value.toISOString() : String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

async function readText(response: Response, where: string): Promise<string> {
  try {
    return await response.text();
  } catch (error) {
    throw transportFailure(error, where);
  }
}

function encodeBody(body: unknown, where: string): string {
  try {
    return JSON.stringify(body);
  } catch (error) {
    throw new InvalidRequest("invalid_request", `${where}: the body is not JSON: ${(error as Error).message}`, null,
                             null, {}, { cause: error });
  }
}

function decodeBody(status: number, text: string): unknown {
  if (status === 202 && text === "") {
    return null;
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ResponseShapeError("response_shape", `the body is not JSON: ${(error as Error).message}`, null,
                                 status, {}, { cause: error });
  }
}

/** A JSON Lines answer: one decoded value per non-empty line. */
function decodeLines(status: number, text: string): unknown[] {
  return text.split("\n").filter((line) => line !== "").map((line) => decodeBody(status, line));
}

function transportFailure(error: unknown, where: string): MemseekError {
  const name = error instanceof Error ? error.name : "";
  if (name === "TimeoutError" || name === "AbortError") {
    return new Timeout("timeout", `${where}: ${String(error)}`, null, null, {}, { cause: error });
  }
  const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return new ConnectionFailed("connection_failed", `${where}: ${String(error)}${cause}`, null, null, {},
                              { cause: error });
}
