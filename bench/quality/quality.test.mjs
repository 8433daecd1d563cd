// bench/quality end to end against the real kvd (KVD_BINARY): a small run completes, and the
// stored-cache answers at ratio 1 are the inline (full prefill) answers, question by question.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';

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

after(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.on('exit', resolve));
    server.kill('SIGTERM');
    await exited;  // it flushes its store on the way out
  }
  rmSync(dir, { recursive: true, force: true });
});

test('a small run answers every question and ratio 1 matches the full prefill', async () => {
  const json = join(dir, 'results.json');
  // Asynchronously: the server's log pipe must keep draining meanwhile.
  const run = await promisify(execFile)(process.execPath, [
    'quality.mjs', '--base-url', baseUrl, '--documents', '4', '--methods',
    'inline,none,kvzip,snapkv,h2o,streaming', '--ratios', '0.3,1.0', '--json', json,
  ]);
  assert.match(run.stdout, /\| kvzip \|/);
  const { results } = JSON.parse(readFileSync(json, 'utf8'));
  const answer = (method, ratio, r) =>
    results.find((x) => x.method === method && x.ratio === ratio && x.doc === r.doc &&
                        x.question === r.question);
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
