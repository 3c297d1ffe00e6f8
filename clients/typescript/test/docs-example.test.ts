// The docs page's example (docs/typescript-sdk.md) type-checks against the built package, as a
// user importing "@memseek/client" would, and runs as written against the live server.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { liveServer, NO_LIVE_SERVER } from "./support.js";

const PAGE = fileURLToPath(new URL("../../../../docs/typescript-sdk.md", import.meta.url));
// Inside the package, so "@memseek/client" resolves to the build through package.json's exports.
const DIRECTORY = fileURLToPath(new URL("../doc/", import.meta.url));
const live = liveServer();

function example(): string {
  const blocks = [...readFileSync(PAGE, "utf8").matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]);
  assert.equal(blocks.length, 1, "the page has one ```ts example");
  return blocks[0];
}

let compiled: string | undefined;

/** The example's emitted script (compiled once per run), after asserting tsc reports nothing. */
function compile(source: string): string {
  if (compiled !== undefined) {
    return compiled;
  }
  mkdirSync(DIRECTORY, { recursive: true });
  const file = `${DIRECTORY}example.ts`;
  writeFileSync(file, source);
  const program = ts.createProgram([file], {
    target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true, types: ["node"], skipLibCheck: true, outDir: DIRECTORY, rootDir: DIRECTORY,
  });
  const problems = ts.getPreEmitDiagnostics(program).map((diagnostic) =>
    ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
  assert.deepEqual(problems, []);
  program.emit();
  compiled = `${DIRECTORY}example.js`;
  return compiled;
}

test("the docs page's example type-checks against the built package", () => {
  compile(example());
});

test("the docs page's example runs against the live server and prints what it says", {
  skip: live === null ? NO_LIVE_SERVER : false }, () => {
  const script = compile(example());
  const printed = execFileSync(process.execPath, [script], {
    env: { ...process.env, MEMSEEK_URL: live!.url, MEMSEEK_KEY: live!.key }, encoding: "utf8", timeout: 300_000,
  }).trim().split("\n");
  assert.match(printed[0], /^1 [0-9a-f-]{36}$/);
  assert.equal(printed.at(-1), "404 record_not_found id");
});
