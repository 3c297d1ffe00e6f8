/**
 * What the node tests share: the live server named by the environment (set by
 * tests/clients/test_typescript_sdk.py), a recording fetch, and a scripted loopback HTTP server
 * for the answers a healthy live server does not give on demand (503, 429, a proxy's HTML page).
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { MemseekClient, type ClientOptions } from "../src/index.js";

export interface Live {
  url: string;
  key: string;
  otherKey: string;
}

/** The live server, or `null` (the live tests then skip, saying why) when the environment names none. */
export function liveServer(): Live | null {
  const { MEMSEEK_URL: url, MEMSEEK_KEY: key, MEMSEEK_OTHER_KEY: otherKey } = process.env;
  return url && key && otherKey ? { url, key, otherKey } : null;
}

export const NO_LIVE_SERVER = "MEMSEEK_URL, MEMSEEK_KEY and MEMSEEK_OTHER_KEY name no live server "
  + "(tests/clients/test_typescript_sdk.py sets them)";

/** A client of the live server; its first write may load the embedding model, hence the long timeout. */
export function liveClient(live: Live, options: ClientOptions = {}): MemseekClient {
  return new MemseekClient(live.url, { apiKey: live.key, timeoutMs: 300_000, ...options });
}

export interface Sent {
  method: string;
  url: string;
  headers: Headers;
}

/** The global fetch, keeping what each request sent. */
export function recordingFetch(): { fetch: typeof globalThis.fetch; sent: Sent[] } {
  const sent: Sent[] = [];
  const fetch: typeof globalThis.fetch = (input, init) => {
    const request = new Request(input, init);
    sent.push({ method: request.method, url: request.url, headers: request.headers });
    return globalThis.fetch(request);
  };
  return { fetch, sent };
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Milliseconds to wait before answering. */
  delayMs?: number;
}

export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A real HTTP server on loopback answering each request with the next reply of its script (a
 * string body is sent as is, anything else as JSON); `close()` stops it.
 */
export async function scriptedServer(...replies: Reply[]): Promise<{ url: string; seen: Seen[]; close(): Promise<void> }> {
  return frontServer(null, replies);
}

/**
 * A loopback server in front of `target`: it answers from `replies` while they last (a load
 * balancer shedding load, say), then passes each request on to `target` and its answer back.
 */
export async function flakyProxy(target: string, ...replies: Reply[]): Promise<{ url: string; seen: Seen[];
                                                                                  close(): Promise<void> }> {
  return frontServer(target, replies);
}

const HOP_BY_HOP = new Set(["host", "connection", "content-length", "transfer-encoding", "content-encoding",
                            "keep-alive"]);

async function frontServer(target: string | null, replies: Reply[]) {
  const seen: Seen[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      seen.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers,
                  body: Buffer.concat(chunks).toString() });
      if (target !== null && replies.length === 0) {
        forward(target, request.method ?? "GET", request.url ?? "/", request.headers, Buffer.concat(chunks))
          .then(({ status, headers, body }) => {
            response.writeHead(status, headers);
            response.end(body);
          }, (error: unknown) => {
            response.writeHead(502);
            response.end(String(error));
          });
        return;
      }
      const reply = replies.shift() ?? { status: 500, body: "the script ran out" };
      const send = () => {
        const text = typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body ?? {});
        response.writeHead(reply.status, { "Content-Type": "application/json", ...(reply.headers ?? {}) });
        response.end(text);
      };
      if (reply.delayMs) {
        setTimeout(send, reply.delayMs);
      } else {
        send();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

async function forward(target: string, method: string, url: string, incoming: IncomingHttpHeaders, body: Buffer) {
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming)) {
    if (!HOP_BY_HOP.has(name) && typeof value === "string") {
      headers.set(name, value);
    }
  }
  const answer = await fetch(target + url, { method, headers, body: body.length ? body : undefined });
  const passed: Record<string, string> = {};
  answer.headers.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name)) {
      passed[name] = value;
    }
  });
  return { status: answer.status, headers: passed, body: Buffer.from(await answer.arrayBuffer()) };
}

/** A loopback port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
