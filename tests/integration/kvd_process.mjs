// `kvd serve` on the bundled model, on loopback with port 0, for the tests written against real
// JavaScript clients (copied beside each of them by kvd_node_tests). KVD_BINARY names the kvd
// under test, KVD_SOURCE_DIR the repository and KVD_MAKE_RANDOM_MODEL (where a test needs it)
// the tool that writes random weights.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync,
         writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';

// Starts kvd on `modelDir` (default: the bundled model) with `configLines` as its config file
// (none when empty) and `args` after the usual ones; resolves once it serves HTTP. `logs()` is everything it has written so far;
// `stop()` sends SIGTERM and resolves with its exit code.
export async function startKvd({ configLines = [], args = [],
                                 modelDir = join(process.env.KVD_SOURCE_DIR, 'models/kvd-tiny') } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'kvd-node-'));
  const config = configLines.length > 0 ? ['--config', join(dir, 'config.yaml')] : [];
  if (configLines.length > 0) writeFileSync(config[1], [...configLines, ''].join('\n'));
  const server = spawn(process.env.KVD_BINARY, [
    'serve', ...config, '--model', modelDir,
    '--data-dir', join(dir, 'data'), '--host', '127.0.0.1', '--port', '0', ...args]);
  let logs = '';
  const exited = new Promise((resolve) => server.on('exit', resolve));
  const port = await new Promise((resolve, reject) => {
    server.stderr.on('data', (data) => {
      logs += data;
      const match = /serving .* on http:\/\/[^:]+:(\d+)/.exec(logs);
      if (match) resolve(match[1]);
    });
    server.on('exit', (code) => reject(new Error(`kvd exited with ${code}:\n${logs}`)));
  });
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    logs: () => logs,
    stop: () => {
      server.kill('SIGTERM');
      return exited;
    },
  };
}

// kvd for the tests of the enclosing describe() (or of the file, at its top level), started by
// startKvd(`options`) before them and held to exit 0 after them; the returned function gives the
// running server.
export function kvdForTests(options) {
  let server;
  before(async () => {
    server = await startKvd(options);
  });
  after(async () => {
    assert.equal(await server.stop(), 0, server.logs());
  });
  return () => server;
}

// The config lines of the list `tenants`: one tenant per entry of `keys` ({ id: apiKey }).
export function tenantLines(keys) {
  const digest = (key) => createHash('sha256').update(key).digest('hex');
  return ['tenants:', ...Object.entries(keys).flatMap(
    ([id, key]) => [`  - id: ${id}`, `    key_sha256: ["${digest(key)}"]`])];
}

// A model directory named kvd-tiny (so it serves as "kvd-tiny") in a new temporary folder: the
// bundled model's files, with the chat template tests/data/chat_templates/`templateFile` when
// given, and with `randomSeed` seeded random weights of the same shape in place of the trained
// ones (whose output is otherwise noise).
export function tinyModelVariant({ templateFile, randomSeed } = {}) {
  const source = join(process.env.KVD_SOURCE_DIR, 'models/kvd-tiny');
  const dir = join(mkdtempSync(join(tmpdir(), 'kvd-model-')), 'kvd-tiny');
  mkdirSync(dir);
  const config = JSON.parse(readFileSync(join(source, 'config.json')));
  if (randomSeed === undefined) {
    symlinkSync(join(source, 'model.safetensors'), join(dir, 'model.safetensors'));
    copyFileSync(join(source, 'config.json'), join(dir, 'config.json'));
  } else {
    execFileSync(process.env.KVD_MAKE_RANDOM_MODEL, [
      '--out', dir, '--hidden', `${config.hidden_size}`, '--layers',
      `${config.num_hidden_layers}`, '--heads', `${config.num_attention_heads}`, '--kv-heads',
      `${config.num_key_value_heads}`, '--head-dim', `${config.head_dim}`, '--intermediate',
      `${config.intermediate_size}`, '--vocab', `${config.vocab_size}`, '--context',
      `${config.max_position_embeddings}`, '--dtype', 'f32', '--seed', `${randomSeed}`]);
    const written = JSON.parse(readFileSync(join(dir, 'config.json')));
    written.bos_token_id = config.bos_token_id;
    written.eos_token_id = config.eos_token_id;
    writeFileSync(join(dir, 'config.json'), JSON.stringify(written, null, 2));
  }
  copyFileSync(join(source, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  const tokenizerConfig = JSON.parse(readFileSync(join(source, 'tokenizer_config.json')));
  if (templateFile !== undefined) {
    tokenizerConfig.chat_template = readFileSync(
      join(process.env.KVD_SOURCE_DIR, 'tests/data/chat_templates', templateFile), 'utf8');
  }
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig));
  return dir;
}

// `run(i)` for i in [0, count), `size` at a time; the results in order.
export async function inBatches(count, size, run) {
  const results = [];
  for (let start = 0; start < count; start += size) {
    const batch = [];
    for (let i = start; i < Math.min(count, start + size); ++i) batch.push(run(i));
    results.push(...(await Promise.all(batch)));
  }
  return results;
}
