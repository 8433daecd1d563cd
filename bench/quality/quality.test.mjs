// bench/quality end to end against the real kvd (KVD_BINARY): small runs complete, the
// stored-cache answers at ratio 1 are the inline (full prefill) answers, question by question,
// and KeepKV at budget 1.0 leaves the prefill as it is.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';

import { KeepKvBodyText } from './api.mjs';

const kvd = process.env.KVD_BINARY;
const model = join(process.env.KVD_SOURCE_DIR, 'models/kvd-tiny');
let server;
let baseUrl;
let dir;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kvd-quality-'));
  server = spawn(kvd, ['serve', '--model', model, '--threads', '2', '--data-dir', join(dir, 'data'),
                       '--host', '127.0.0.1', '--port', '0']);
  let logs = '';
  await new Promise((resolve, reject) => {
    server.stderr.on('data', (data) => {
      logs += data;
      const match = /serving .* on http:\/\/[^:]+:(\d+)/.exec(logs);
      if (match && !baseUrl) {
        baseUrl = `http://127.0.0.1:${match[1]}/v1`;
        resolve();
      }
    });
    server.on('exit', (code) => reject(new Error(`kvd exited with ${code}:\n${logs}`)));
  });
});

// Runs quality.mjs on the server with `args` and --json; returns its stdout and the results.
// Throws (failing the test) when it exits non-zero: a request failed.
async function Run(args) {
  const json = join(dir, 'results.json');
  // Asynchronously: the server's log pipe must keep draining meanwhile.
  const run = await promisify(execFile)(
    process.execPath, ['quality.mjs', '--base-url', baseUrl, ...args, '--json', json]);
  return { stdout: run.stdout, results: JSON.parse(readFileSync(json, 'utf8')).results };
}

// The answer of `method` at `ratio` to the question of result r.
const AnswerTo = (results, method, ratio, r) =>
  results.find((x) => x.method === method && x.ratio === ratio && x.doc === r.doc &&
                      x.question === r.question);

after(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.on('exit', resolve));
    server.kill('SIGTERM');
    await exited;  // it flushes its store on the way out
  }
  rmSync(dir, { recursive: true, force: true });
});

test('a small run answers every question and ratio 1 matches the full prefill', async () => {
  const { stdout, results } = await Run([
    '--documents', '4', '--methods', 'inline,none,kvzip,snapkv,h2o,streaming',
    '--ratios', '0.3,1.0',
  ]);
  assert.match(stdout, /\| kvzip \|/);
  const answer = (method, ratio, r) => AnswerTo(results, method, ratio, r);
  const inline = results.filter((r) => r.method === 'inline');
  assert.equal(inline.length, 12);
  for (const method of ['none', 'kvzip', 'snapkv', 'h2o', 'streaming']) {
    for (const r of inline) {
      const stored = answer(method, 1, r);
      assert.ok(stored, `${method} at 1.0 answered doc ${r.doc} question ${r.question}`);
      assert.equal(stored.got, r.got, `${method} at 1.0, doc ${r.doc}, key ${r.key}`);
      assert.ok(typeof answer(method, 0.3, r)?.got === 'string' || method === 'none');
    }
  }
});

test('each stored precision runs; int8 takes a fraction of the f32 bytes', async () => {
  const { stdout, results } = await Run([
    '--documents', '3', '--methods', 'none,kvzip', '--ratios', '0.3', '--kv-dtypes', 'f32,int8',
  ]);
  assert.match(stdout, /\| kvzip int8 \|/);
  assert.match(stdout, /Stored bytes relative to the same document/);
  for (const r of results) assert.equal(r.error, undefined, `${r.method} ${r.kv_dtype}: ${r.error}`);
  const report = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8'));
  const bytes = (method, kvDtype) => report.cells
    .find((c) => c.method === method && c.kvDtype === kvDtype)
    .documents.map((d) => d.stored_bytes);
  const f32 = bytes('kvzip', 'f32');
  bytes('kvzip', 'int8').forEach((b, i) => assert.ok(b < f32[i] / 3, `document ${i}: ${b}`));
});

test('completions continue the stored document', async () => {
  const { results } = await Run(['--documents', '3', '--methods', 'none', '--completions']);
  assert.equal(results.length, 9);
  for (const r of results) {
    assert.equal(r.error, undefined, r.error);
    assert.ok(r.prompt_tokens > 0 && typeof r.got === 'string');
  }
});

test('a keepkv budget of 1.0 is sent with its point, not as one token', () => {
  const body = { model: 'm', messages: [], keepkv: { budget: 1, method: 'evict' } };
  assert.match(KeepKvBodyText(body), /"keepkv":\{"budget":1\.0,"method":"evict"\}\}$/);
  assert.deepEqual(JSON.parse(KeepKvBodyText(body)), body);
  body.keepkv.budget = 0.3;
  assert.deepEqual(JSON.parse(KeepKvBodyText(body)), body);
});

test('keepkv runs answer every question; at 1.0 the prefill is the inline one', async () => {
  const { stdout, results } = await Run([
    '--documents', '4', '--methods', 'inline,keepkv', '--ratios', '0.3,1.0',
  ]);
  assert.match(stdout, /\| keepkv-gqa_fit \|/);
  assert.match(stdout, /KeepKV budget/);
  const inline = results.filter((r) => r.method === 'inline');
  assert.equal(inline.length, 12);
  for (const r of results) {
    assert.equal(r.error, undefined, `${r.method} ${r.ratio}: ${r.error}`);
    assert.ok(r.prompt_tokens > 0, `${r.method} ${r.ratio} reported usage.prompt_tokens`);
  }
  // Budget 1.0 is the whole prompt, so nothing is merged before the first decode step and the
  // first two tokens (a value's letters are one token each) are the full prefill's. Later
  // tokens need not be: the budget does not grow with the answer, so every decode step past
  // the prompt's length merges (docs/api.md, KeepKV; README.md, Reading the figures).
  for (const r of inline) {
    const kept = AnswerTo(results, 'keepkv-gqa_fit', 1, r);
    assert.ok(kept, `keepkv-gqa_fit at 1.0 answered doc ${r.doc} question ${r.question}`);
    assert.equal(kept.got.slice(0, 2), r.got.slice(0, 2),
                 `keepkv-gqa_fit at 1.0, doc ${r.doc}, key ${r.key}: ${kept.got} vs ${r.got}`);
  }
  // The budget reaches the server: at 0.3 every rule changes some answer.
  for (const rule of ['gqa_fit', 'group_mean', 'weighted_mean', 'convex', 'evict']) {
    const changed =
      inline.filter((r) => AnswerTo(results, `keepkv-${rule}`, 0.3, r)?.got !== r.got);
    assert.ok(changed.length > 0, `keepkv-${rule} at 0.3 answered as inline`);
  }
});
