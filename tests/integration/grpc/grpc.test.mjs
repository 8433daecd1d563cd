// kvd's gRPC API (proto/kvd/v1) driven by the Node.js gRPC client: answers equal the HTTP API's,
// every error status with its trailing metadata, Abort, deadlines and cancellation freeing the
// sequences, streamed document uploads, health and reflection (through the protos their npm
// packages ship), the protocol label on request metrics, and draining.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import { tinyModelVariant } from './kvd_process.mjs';

const kvd = process.env.KVD_BINARY;
const source = process.env.KVD_SOURCE_DIR;
const modules = join(dirname(fileURLToPath(import.meta.url)), 'node_modules');
const sha256 = (text) => createHash('sha256').update(text).digest('hex');
const { status: Status } = grpc;

const loaderOptions = {
  keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true,
};
const kvdProtos = grpc.loadPackageDefinition(protoLoader.loadSync(
  ['kvd/v1/inference.proto', 'kvd/v1/documents.proto'],
  { ...loaderOptions, includeDirs: [join(source, 'proto')] }));
const healthProtos = grpc.loadPackageDefinition(protoLoader.loadSync(
  'health/v1/health.proto',
  { ...loaderOptions, includeDirs: [join(modules, 'grpc-health-check/proto')] }));
const reflectionProtos = grpc.loadPackageDefinition(protoLoader.loadSync(
  // Debian's gRPC 1.51, which kvd links, serves reflection as v1alpha only.
  'grpc/reflection/v1alpha/reflection.proto',
  { ...loaderOptions, includeDirs: [join(modules, '@grpc/reflection/build/proto')] }));

// The document question of docs/examples, and a small key-value document of the same kind.
const documentPrompt = readFileSync(join(source, 'docs/examples/document_question.txt'), 'utf8');
const question = 'zix: WEK\nvig: KSOHB\n\nQ:vig';
const documentPieces = ['zix: WEK\n', 'vig: KSOHB\n', 'the old river finds a lamp.'];
// A generation that outlasts the test's next steps by far (it is cancelled or aborted): kvd-tiny
// makes 500 tokens in about 0.15 s on a CPU, 4 x 2000 in seconds.
const long = { model: 'kvd-tiny', prompt: 'the', max_tokens: 2000, ignore_eos: true, n: 4 };

// A free TCP port on 127.0.0.1 for --grpc-port (0 there means no gRPC server).
async function freePort() {
  const probe = createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

// One `kvd serve` with HTTP and gRPC on 127.0.0.1, its logs read all the time.
class Kvd {
  // `configLines` are added to the config file (YAML lines); `modelDir` is the model served.
  static async start(configLines = [], modelDir = join(source, 'models/kvd-tiny')) {
    const server = new Kvd();
    try {
      await server.#start(configLines, modelDir);
    } catch (error) {
      if (server.process) await server.stop();
      throw error;
    }
    return server;
  }

  async #start(configLines, modelDir) {
    this.dir = mkdtempSync(join(tmpdir(), 'kvd-grpc-'));
    const config = join(this.dir, 'config.yaml');
    writeFileSync(config, [
      'tenants:',
      '  - id: alpha',
      `    key_sha256: ["${sha256('key-alpha')}"]`,
      '  - id: beta',
      `    key_sha256: ["${sha256('key-beta')}"]`,
      '  - id: limited',
      `    key_sha256: ["${sha256('key-limited')}"]`,
      '    requests_per_minute: 1',
      'documents:',
      '  upload_wait_seconds: 30',  // uploads answer once the document is ready
      ...configLines,
      '',
    ].join('\n'));
    const grpcPort = await freePort();
    this.logs = '';
    this.process = spawn(kvd, [
      'serve', '--config', config, '--model', modelDir,
      '--data-dir', join(this.dir, 'data'), '--host', '127.0.0.1', '--port', '0',
      '--grpc-port', String(grpcPort)], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.exited = new Promise((resolve) => this.process.on('exit', resolve));
    this.process.on('error', (error) => {  // not started: waitForLog fails with it
      this.logs += `${error}\n`;
      this.process.emit('exit', null);
    });
    const append = (data) => { this.logs += data; };
    this.process.stdout.on('data', append);
    this.process.stderr.on('data', append);
    const http = await this.waitForLog(/serving .* on http:\/\/[^:]+:(\d+)/);
    const served = await this.waitForLog(/serving gRPC on [^:]+:(\d+)/);
    assert.equal(Number(served[1]), grpcPort);
    this.http = `http://127.0.0.1:${http[1]}`;
    const address = `127.0.0.1:${grpcPort}`;
    const insecure = grpc.credentials.createInsecure();
    this.inference = new kvdProtos.kvd.v1.InferenceService(address, insecure);
    this.documents = new kvdProtos.kvd.v1.DocumentService(address, insecure);
    this.health = new healthProtos.grpc.health.v1.Health(address, insecure);
    this.reflection = {
      v1alpha: new reflectionProtos.grpc.reflection.v1alpha.ServerReflection(address, insecure),
    };
  }

  // The first match of `pattern` in the logs, as soon as it is there; fails on exit or after
  // `seconds`.
  waitForLog(pattern, seconds = 30) {
    return new Promise((resolve, reject) => {
      const check = () => {
        const match = pattern.exec(this.logs);
        if (!match) return false;
        done();
        resolve(match);
        return true;
      };
      const onExit = (code) => {
        done();
        reject(new Error(`kvd exited with ${code} before ${pattern}:\n${this.logs}`));
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no ${pattern} in ${seconds} s:\n${this.logs}`));
      }, seconds * 1000);
      const done = () => {
        clearTimeout(timer);
        this.process.stderr.off('data', check);
        this.process.stdout.off('data', check);
        this.process.off('exit', onExit);
      };
      if (check()) return;
      this.process.stderr.on('data', check);
      this.process.stdout.on('data', check);
      this.process.on('exit', onExit);
    });
  }

  closeClients() {
    for (const client of [this.inference, this.documents, this.health,
                          this.reflection?.v1alpha]) {
      client?.close();
    }
  }

  // SIGTERM, then the exit status once the process is gone; the temp dir goes after it.
  async stop() {
    this.closeClients();
    if (this.process.exitCode === null && this.process.signalCode === null) {
      this.process.kill('SIGTERM');
    }
    const code = await this.exited;
    rmSync(this.dir, { recursive: true, force: true });
    return code;
  }

  async fetch(path, body, key = 'key-alpha') {
    const response = await fetch(`${this.http}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    assert.equal(response.status, 200, `${path}: ${text}`);
    return path === '/metrics' ? text : JSON.parse(text);
  }

  // Polls /metrics (bounded) until `line` is one of its lines.
  async waitForMetric(line) {
    let metrics = '';
    for (let i = 0; i < 500; ++i) {
      metrics = await this.fetch('/metrics');
      if (metrics.split('\n').includes(line)) return;
    }
    assert.fail(`no "${line}" in /metrics:\n${metrics}`);
  }

  waitForIdle() {
    return this.waitForMetric('vllm:num_requests_running{model_name="kvd-tiny",engine="0"} 0');
  }

  async metric(name, labels) {
    const metrics = await this.fetch('/metrics');
    const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
    let total = 0;
    for (const line of metrics.split('\n')) {
      const match = /^([^{ ]+)\{([^}]*)\} (\S+)$/.exec(line);
      if (!match || match[1] !== name) continue;
      const have = match[2].split(',');
      if (wanted.every((label) => have.includes(label))) total += Number(match[3]);
    }
    return total;
  }
}

function metadata(key) {
  const result = new grpc.Metadata();
  if (key) result.add('authorization', `Bearer ${key}`);
  return result;
}

// A unary call as a promise.
function unary(client, method, request, { key = 'key-alpha', deadline } = {}) {
  return new Promise((resolve, reject) => {
    client[method](request, metadata(key), deadline ? { deadline } : {},
                   (error, response) => (error ? reject(error) : resolve(response)));
  });
}

// A Generate call: `done` resolves with every message when it ends OK and rejects with the
// error (carrying the messages received before it) otherwise; `first` resolves with the first
// message.
function generate(server, request, { key = 'key-alpha', deadline } = {}) {
  const call = server.inference.Generate(request, metadata(key), deadline ? { deadline } : {});
  const messages = [];
  call.on('data', (message) => messages.push(message));
  const done = new Promise((resolve, reject) => {
    call.on('error', (error) => {
      error.messages = messages;
      reject(error);
    });
    call.on('status', (status) => {
      if (status.code === Status.OK) resolve({ messages, status });
    });
  });
  done.catch(() => {});  // awaited by the test when it matters
  const first = new Promise((resolve, reject) => {
    call.once('data', resolve);
    done.then(() => reject(new Error('the stream ended without output')), reject);
  });
  first.catch(() => {});
  return { call, messages, done, first };
}

// The choices' texts, completions and the final usage of a finished Generate.
function summarize(messages) {
  const texts = [];
  const completions = [];
  const errors = [];
  for (const message of messages) {
    if (message.kind === 'chunk') {
      texts[message.chunk.index] = (texts[message.chunk.index] ?? '') + message.chunk.text;
    } else if (message.kind === 'completion') {
      completions.push(message.completion);
    } else {
      errors.push(message.error);
    }
  }
  const usage = completions.at(-1)?.usage;
  return { texts, completions, errors, usage };
}

const finishReasons = { stop: 'FINISH_REASON_STOP', length: 'FINISH_REASON_LENGTH' };

// Rejection checks: the code, and the trailing metadata named in `trailers`.
function grpcError(code, trailers = {}) {
  return (error) => {
    assert.equal(error.code, code, `${Status[error.code]}: ${error.details}`);
    for (const [key, value] of Object.entries(trailers)) {
      const got = error.metadata.get(key)[0];
      if (value instanceof RegExp) {
        assert.match(String(got), value, `${key}: ${got}`);
      } else {
        assert.equal(got, value, `${key}`);
      }
    }
    return true;
  };
}

// A document uploaded in `pieces`: the header, then the text in several messages.
// Uploads `pieces` as one text; the header declares their total length unless it says one.
function upload(server, pieces, header, key = 'key-alpha') {
  return new Promise((resolve, reject) => {
    const call = server.documents.Upload(metadata(key), (error, document) =>
      (error ? reject(error) : resolve(document)));
    const bytes = pieces.reduce((sum, text) => sum + Buffer.byteLength(text), 0);
    if (header) call.write({ header: { text_bytes: bytes, ...header } });
    for (const text of pieces) call.write({ text: Buffer.from(text) });
    call.end();
  });
}

let server;

before(async () => {
  server = await Kvd.start();
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, server.logs);
});

test('ListModels, Tokenize and Detokenize answer as /v1/models, /tokenize, /detokenize', async () => {
  const models = await unary(server.inference, 'ListModels', {});
  const httpModels = await server.fetch('/v1/models');
  assert.deepEqual(
    models.models,
    httpModels.data.map(({ id, max_model_len, owned_by }) => ({ id, max_model_len, owned_by })));
  assert.equal(models.models[0].id, 'kvd-tiny');

  for (const add_special_tokens of [true, false]) {
    const tokenized = await unary(server.inference, 'Tokenize', {
      model: 'kvd-tiny', prompt: documentPrompt, add_special_tokens,
    });
    const httpTokenized = await server.fetch('/tokenize', {
      model: 'kvd-tiny', prompt: documentPrompt, add_special_tokens,
    });
    assert.deepEqual(tokenized, httpTokenized);
    assert.ok(tokenized.count > 100);
  }
  const messages = [{ role: 'system', content: 'be brief' }, { role: 'user', content: question }];
  const chat = await unary(server.inference, 'Tokenize', {
    model: 'kvd-tiny', messages: { messages },
  });
  const httpChat = await server.fetch('/tokenize', { model: 'kvd-tiny', messages });
  assert.deepEqual(chat, httpChat);
  const noPrompt = await unary(server.inference, 'Tokenize', {
    model: 'kvd-tiny', messages: { messages }, add_generation_prompt: false,
  });
  assert.deepEqual(
    noPrompt,
    await server.fetch('/tokenize', { model: 'kvd-tiny', messages, add_generation_prompt: false }));
  assert.ok(noPrompt.count < chat.count);

  // Round trip: the text without special tokens comes back as it was.
  const plain = await unary(server.inference, 'Tokenize', {
    model: 'kvd-tiny', prompt: question, add_special_tokens: false,
  });
  const detokenized = await unary(server.inference, 'Detokenize', {
    model: 'kvd-tiny', tokens: plain.tokens,
  });
  assert.equal(detokenized.prompt, question);
  assert.deepEqual(detokenized, await server.fetch('/detokenize', {
    model: 'kvd-tiny', tokens: plain.tokens,
  }));
  const chatText = await unary(server.inference, 'Detokenize', {
    model: 'kvd-tiny', tokens: chat.tokens,
  });
  assert.deepEqual(chatText, await server.fetch('/detokenize', {
    model: 'kvd-tiny', tokens: chat.tokens,
  }));
  assert.ok(chatText.prompt.includes(question), chatText.prompt);
  await assert.rejects(
    unary(server.inference, 'Detokenize', { model: 'kvd-tiny', tokens: [1, 100000] }),
    grpcError(Status.INVALID_ARGUMENT, { 'kvd-error-param': 'tokens' }));
});

test('a streamed chat Generate equals POST /v1/chat/completions', async () => {
  const messages = [{ role: 'user', content: question }];
  const { messages: replies } = await generate(server, {
    model: 'kvd-tiny', messages: { messages }, sampling: { temperature: 0 }, max_tokens: 16,
  }).done;
  const http = await server.fetch('/v1/chat/completions', {
    model: 'kvd-tiny', messages, temperature: 0, max_tokens: 16,
  });
  const { texts, completions, errors, usage } = summarize(replies);
  assert.deepEqual(errors, []);
  assert.ok(replies.filter((m) => m.kind === 'chunk').length > 1, 'the text comes in chunks');
  assert.equal(texts[0], http.choices[0].message.content);
  assert.equal(texts[0], 'KSOHB');
  assert.equal(completions.length, 1);
  assert.equal(completions[0].finish_reason, finishReasons[http.choices[0].finish_reason]);
  assert.equal(completions[0].finish_reason, 'FINISH_REASON_STOP');
  assert.equal(usage.prompt_tokens, http.usage.prompt_tokens);
  assert.equal(usage.completion_tokens, http.usage.completion_tokens);
  assert.equal(usage.cached_tokens, 0);
  // Every chunk's usage is cumulative; the last one's equals the final usage.
  const chunks = replies.filter((m) => m.kind === 'chunk').map((m) => m.chunk);
  assert.equal(chunks.at(-1).usage.completion_tokens, usage.completion_tokens);
  assert.equal(chunks.flatMap((c) => c.token_ids).length, usage.completion_tokens);
  // The last message of the stream is the completion.
  assert.equal(replies.at(-1).kind, 'completion');
});

test('tool calls over Generate equal POST /v1/chat/completions', async () => {
  const tools = await Kvd.start([], tinyModelVariant({ templateFile: 'hermes_tools.jinja' }));
  try {
    const parameters = {
      type: 'object', properties: { city: { type: 'string', maxLength: 8 } },
      required: ['city'], additionalProperties: false,
    };
    const messages = [{ role: 'user', content: 'Weather?' },
                      { role: 'assistant', content: '',
                        tool_calls: [{ id: 'call_0', name: 'get_weather',
                                       arguments: '{"city": "Rome"}' }] },
                      { role: 'tool', content: 'sunny', tool_call_id: 'call_0' },
                      { role: 'user', content: 'And tomorrow?' }];
    for (const [tool_choice, httpChoice] of [
      [{ mode: 'required' }, 'required'],
      [{ function: 'get_weather' }, { type: 'function', function: { name: 'get_weather' } }]]) {
      const { messages: replies } = await generate(tools, {
        model: 'kvd-tiny', messages: { messages }, sampling: { temperature: 1, seed: 4 },
        max_tokens: 200, tools: [{ name: 'get_weather', parameters_json: JSON.stringify(parameters) }],
        tool_choice, parallel_tool_calls: false,
      }).done;
      const http = await tools.fetch('/v1/chat/completions', {
        model: 'kvd-tiny', temperature: 1, seed: 4, max_tokens: 200, tool_choice: httpChoice,
        parallel_tool_calls: false,
        tools: [{ type: 'function', function: { name: 'get_weather', parameters } }],
        messages: messages.map(({ tool_calls, tool_call_id, ...rest }) => ({
          ...rest,
          ...(tool_calls ? { tool_calls: tool_calls.map(({ id, name, arguments: args }) => ({
            id, type: 'function', function: { name, arguments: args } })) } : {}),
          ...(tool_call_id ? { tool_call_id } : {}),
        })),
      });
      const { texts, completions, errors } = summarize(replies);
      assert.deepEqual(errors, []);
      assert.equal(texts[0] ?? '', '', 'no content outside the call');
      const fragments = replies.filter((m) => m.kind === 'chunk')
        .flatMap((m) => m.chunk.tool_calls);
      assert.equal(fragments[0].name, 'get_weather');
      const call = completions[0].tool_calls[0];
      assert.equal(fragments[0].id, call.id);
      assert.equal(fragments.map((f) => f.arguments).join(''), call.arguments);
      const httpCall = http.choices[0].message.tool_calls[0];
      assert.equal(call.name, httpCall.function.name);
      assert.equal(call.arguments, httpCall.function.arguments);
      assert.ok(typeof JSON.parse(call.arguments).city === 'string', call.arguments);
      assert.equal(completions[0].finish_reason,
                   http.choices[0].finish_reason === 'tool_calls' ? 'FINISH_REASON_TOOL_CALLS'
                     : finishReasons[http.choices[0].finish_reason]);
    }
    // A function not in tools, and tools on a prompt, are INVALID_ARGUMENT naming the field.
    await assert.rejects(generate(tools, {
      model: 'kvd-tiny', messages: { messages: [messages[0]] },
      tools: [{ name: 'get_weather' }], tool_choice: { function: 'other' },
    }).done, grpcError(Status.INVALID_ARGUMENT, { 'kvd-error-param': 'tool_choice' }));
    await assert.rejects(generate(tools, {
      model: 'kvd-tiny', prompt: 'x', tools: [{ name: 'get_weather' }],
    }).done, grpcError(Status.INVALID_ARGUMENT, { 'kvd-error-param': 'tools' }));
  } finally {
    assert.equal(await tools.stop(), 0, tools.logs);
  }
});

// KeepKv's budget is a oneof: budget_tokens 1 keeps one entry of the prompt's own (and merges
// the rest), budget_fraction 1 the whole prompt (merging only what decoding adds past it).
test('KeepKv budget_tokens 1 is one token, not the whole prompt', async () => {
  const request = {
    model: 'kvd-tiny', messages: { messages: [{ role: 'user', content: question }] },
    sampling: { temperature: 0 }, max_tokens: 4,
  };
  const mergesOf = async (keepkv) => {
    const before = await server.metric('kvd_keepkv_merges_total', {});
    // A salt of its own, so the second run compacts the whole prompt again: KeepKV protects a
    // cached prefix.
    await generate(server, { ...request, keepkv, cache_salt: JSON.stringify(keepkv) }).done;
    return (await server.metric('kvd_keepkv_merges_total', {})) - before;
  };
  const whole = await mergesOf({ budget_fraction: 1 });
  const one = await mergesOf({ budget_tokens: 1 });
  assert.ok(one > whole, `one token merges ${one} entries, the whole prompt ${whole}`);
});

test('a completion with n = 2 and a seed equals POST /v1/completions', async () => {
  const request = { model: 'kvd-tiny', prompt: 'the old river', max_tokens: 8, ignore_eos: true };
  const { messages } = await generate(server, {
    ...request, n: 2, sampling: { temperature: 1.5, seed: 3 },
  }).done;
  const http = await server.fetch('/v1/completions', {
    ...request, n: 2, temperature: 1.5, seed: 3,
  });
  const { texts, completions, errors, usage } = summarize(messages);
  assert.deepEqual(errors, []);
  assert.deepEqual(texts, http.choices.map((choice) => choice.text));
  assert.notEqual(texts[0], texts[1], 'two samples of one seed differ');
  assert.deepEqual(completions.map((c) => c.index).sort(), [0, 1]);
  for (const completion of completions) {
    assert.equal(completion.finish_reason,
                 finishReasons[http.choices[completion.index].finish_reason]);
  }
  assert.equal(usage.completion_tokens, 16);
  assert.equal(usage.completion_tokens, http.usage.completion_tokens);
  assert.equal(usage.prompt_tokens, http.usage.prompt_tokens);
  // Only the last completion carries the final usage.
  assert.equal(completions[0].usage, null);
});

test('prompt_token_ids generate as the same ids over HTTP', async () => {
  const { tokens } = await server.fetch('/tokenize', { model: 'kvd-tiny', prompt: documentPrompt });
  const { messages } = await generate(server, {
    model: 'kvd-tiny', prompt_token_ids: { ids: tokens }, sampling: { temperature: 0 },
    max_tokens: 16, logprobs: 2,
  }).done;
  const http = await server.fetch('/v1/completions', {
    model: 'kvd-tiny', prompt: tokens, temperature: 0, max_tokens: 16, logprobs: 2,
  });
  const { texts, completions, usage } = summarize(messages);
  assert.equal(texts[0], 'KSOHB');
  assert.equal(texts[0], http.choices[0].text);
  assert.equal(completions[0].finish_reason, 'FINISH_REASON_STOP');
  assert.equal(usage.prompt_tokens, tokens.length);
  assert.equal(usage.prompt_tokens, http.usage.prompt_tokens);
  const logprobs = messages.filter((m) => m.kind === 'chunk').flatMap((m) => m.chunk.logprobs);
  assert.equal(logprobs.length, usage.completion_tokens);
  assert.deepEqual(logprobs.map((l) => l.token), http.choices[0].logprobs.tokens);
  for (const logprob of logprobs) {
    assert.equal(logprob.top.length, 2);
    assert.ok(logprob.logprob <= 0);
  }
});

test('errors are gRPC statuses with the HTTP error fields as trailing metadata', async () => {
  const chat = { model: 'kvd-tiny', messages: { messages: [{ role: 'user', content: 'Q:vig' }] } };
  // INVALID_ARGUMENT, naming the parameter.
  await assert.rejects(
    generate(server, { ...chat, sampling: { temperature: 5 } }).done,
    grpcError(Status.INVALID_ARGUMENT, { 'kvd-error-param': 'temperature' }));
  await assert.rejects(
    generate(server, { model: 'kvd-tiny' }).done,
    grpcError(Status.INVALID_ARGUMENT, { 'kvd-error-param': 'input' }));
  await assert.rejects(
    generate(server, { model: 'kvd-tiny', prompt: documentPrompt, max_tokens: 2040 }).done,
    grpcError(Status.INVALID_ARGUMENT, { 'kvd-error-code': 'context_length_exceeded' }));
  // UNAUTHENTICATED: no key, an unknown key; unary calls too.
  await assert.rejects(generate(server, chat, { key: null }).done,
                       grpcError(Status.UNAUTHENTICATED, { 'kvd-error-code': 'invalid_api_key' }));
  await assert.rejects(generate(server, chat, { key: 'key-wrong' }).done,
                       grpcError(Status.UNAUTHENTICATED));
  await assert.rejects(unary(server.inference, 'ListModels', {}, { key: 'key-wrong' }),
                       grpcError(Status.UNAUTHENTICATED));
  await assert.rejects(unary(server.documents, 'List', {}, { key: null }),
                       grpcError(Status.UNAUTHENTICATED));
  // NOT_FOUND: an unknown model; another tenant's document, for Get and for Generate.
  await assert.rejects(generate(server, { ...chat, model: 'no-such-model' }).done,
                       grpcError(Status.NOT_FOUND, { 'kvd-error-code': 'model_not_found' }));
  for (const call of ['Tokenize', 'Detokenize']) {
    await assert.rejects(
      unary(server.inference, call, { model: 'no-such-model', prompt: 'x', tokens: [1] }),
      grpcError(Status.NOT_FOUND, { 'kvd-error-code': 'model_not_found', 'kvd-error-param': 'model' }));
  }
  const document = await upload(server, documentPieces, {
    compression: { method: 'kvzip', ratio: 0.5 },
  });
  assert.equal(document.status, 'DOCUMENT_STATUS_READY');
  await assert.rejects(unary(server.documents, 'Get', { id: document.id }, { key: 'key-beta' }),
                       grpcError(Status.NOT_FOUND));
  await assert.rejects(
    generate(server, { ...chat, documents: [document.id] }, { key: 'key-beta' }).done,
    grpcError(Status.NOT_FOUND,
              { 'kvd-error-param': 'documents', 'kvd-error-code': 'document_not_found' }));
  // RESOURCE_EXHAUSTED with retry-after: one request a minute for `limited`.
  const once = await generate(server, { ...chat, max_tokens: 1 }, { key: 'key-limited' }).done;
  assert.equal(summarize(once.messages).completions.length, 1);
  await assert.rejects(generate(server, { ...chat, max_tokens: 1 }, { key: 'key-limited' }).done,
                       grpcError(Status.RESOURCE_EXHAUSTED, { 'retry-after': /^[1-9]\d*$/ }));
  // ALREADY_EXISTS: a second running Generate with the same request_id.
  const running = generate(server, { ...long, request_id: 'twice' });
  await running.first;
  await assert.rejects(
    generate(server, { ...chat, request_id: 'twice', max_tokens: 1 }).done,
    grpcError(Status.ALREADY_EXISTS, { 'kvd-error-param': 'request_id' }));
  // Another tenant may use the same id.
  await generate(server, { ...chat, request_id: 'twice', max_tokens: 1 }, { key: 'key-beta' }).done;
  assert.deepEqual(await unary(server.inference, 'Abort', { request_id: 'twice' }),
                   { aborted: true });
  await running.done.catch(() => {});
  await server.waitForIdle();
  // DEADLINE_EXCEEDED: with the deadline test below, which also checks the sequences end.
});

// Starts `request` (`long`: n sequences), waits until they all run, stops them with `stop` and
// checks that the call ends as `check` says and that the server frees all n sequences early.
async function stopRunning(request, stop, check, options = {}) {
  const aborts = () => server.metric('vllm:request_success_total', { finished_reason: 'abort' });
  const generated = () => server.metric('vllm:generation_tokens_total', {});
  const before = { aborts: await aborts(), tokens: await generated() };
  const call = generate(server, request, options);
  await call.first;
  // The gauge says they run before they are stopped, so that its 0 below means they ended.
  await server.waitForMetric(
    `vllm:num_requests_running{model_name="kvd-tiny",engine="0"} ${long.n}`);
  await stop(call);
  await check(call.done);
  await server.waitForIdle();
  assert.equal(await aborts(), before.aborts + long.n, 'every sequence ended as aborted');
  assert.ok(await generated() - before.tokens < long.n * long.max_tokens,
            'the generation stopped early');
}

test('a request that does not parse is INVALID_ARGUMENT, with no log line per message', async () => {
  // Raw bytes on the wire: `serialize` passes them through as they are.
  const raw = (bytes) => new Promise((resolve, reject) => {
    server.inference.makeUnaryRequest(
      '/kvd.v1.InferenceService/Tokenize', (buffer) => buffer, (buffer) => buffer, bytes,
      metadata('key-alpha'), (error, response) => (error ? reject(error) : resolve(response)));
  });
  const logsBefore = server.logs.length;
  // A length-delimited field longer than the message; then `prompt` (field 2) holding bytes
  // that are not UTF-8.
  const truncated = Buffer.from([0x12, 0x7f, 0x61]);
  const notUtf8 = Buffer.from([0x0a, 0x08, ...Buffer.from('kvd-tiny'), 0x12, 0x02, 0xff, 0xfe]);
  for (let i = 0; i < 50; ++i) {
    for (const bytes of [truncated, notUtf8]) {
      await assert.rejects(raw(bytes), (error) => {
        assert.equal(error.code, Status.INVALID_ARGUMENT, error.details);
        assert.match(error.details, /not a valid message for \/kvd\.v1\.InferenceService\/Tokenize/);
        return true;
      });
    }
  }
  // libprotobuf writes a line for each string that is not UTF-8; the server lets one a second
  // through at most.
  const lines = server.logs.slice(logsBefore).split('\n').filter((line) => /protobuf/.test(line));
  assert.ok(lines.length <= 10, lines.join('\n'));
  // A well-formed call on the same client still works.
  const tokenized = await unary(server.inference, 'Tokenize', { model: 'kvd-tiny', prompt: 'the' });
  assert.ok(tokenized.count > 0);
});

test('a message over max_body_bytes is RESOURCE_EXHAUSTED, and the server goes on', async () => {
  // The default limit is 8 MiB, for gRPC messages as for HTTP bodies.
  const prompt = 'the '.repeat(9 << 18);
  await assert.rejects(
    unary(server.inference, 'Tokenize', { model: 'kvd-tiny', prompt }),
    (error) => {
      assert.equal(error.code, Status.RESOURCE_EXHAUSTED, error.details);
      assert.match(error.details, /larger than max/i);
      return true;
    });
  await assert.rejects(generate(server, { model: 'kvd-tiny', prompt, max_tokens: 1 }).done,
                       (error) => error.code === Status.RESOURCE_EXHAUSTED);
  const tokenized = await unary(server.inference, 'Tokenize', { model: 'kvd-tiny', prompt: 'the' });
  assert.ok(tokenized.count > 0);
});

test('Abort, a deadline and a cancelled call free the sequences', async () => {
  // Abort by request_id, from another call: the stream ends with aborted completions.
  await stopRunning({ ...long, request_id: 'to-abort' }, async () => {
    assert.deepEqual(await unary(server.inference, 'Abort', { request_id: 'to-abort' }),
                     { aborted: true });
    assert.deepEqual(await unary(server.inference, 'Abort', { request_id: 'never-started' }),
                     { aborted: false });
  }, async (done) => {
    const { completions, errors } = summarize((await done).messages);
    assert.deepEqual(errors, []);
    assert.deepEqual(completions.map((c) => c.finish_reason),
                     Array(long.n).fill('FINISH_REASON_ABORT'));
  });
  // A deadline (the generation would take seconds).
  await stopRunning(long, () => {},
                    (done) => assert.rejects(done, grpcError(Status.DEADLINE_EXCEEDED)),
                    { deadline: Date.now() + 500 });
  // The client cancels its call.
  await stopRunning(long, (call) => call.call.cancel(),
                    (done) => assert.rejects(done, grpcError(Status.CANCELLED)));
});

test('documents: streamed upload, questions, Get, List, Recut, Delete', async () => {
  const document = await upload(server, documentPieces, {
    compression: { method: 'kvzip', ratio: 0.5, kv_dtype: 'int8' },
    metadata_json: '{"title":"grpc"}',
  });
  assert.equal(document.status, 'DOCUMENT_STATUS_READY');
  assert.match(document.id, /^doc-/);
  assert.equal(document.method, 'kvzip');
  assert.equal(document.kv_dtype, 'int8');
  assert.ok(Math.abs(document.ratio - 0.5) < 0.01, `${document.ratio}`);
  assert.deepEqual(JSON.parse(document.metadata_json), { title: 'grpc' });
  assert.equal(document.progress, 100);
  // The same document over HTTP.
  const http = await server.fetch(`/v1/documents/${document.id}`);
  assert.equal(http.status, 'ready');
  for (const field of ['token_count', 'kept_entries', 'stored_bytes', 'created_at', 'ratio',
                       'kv_dtype']) {
    assert.equal(document[field], http[field], field);
  }
  // The pieces made one text: the document's tokens are those of the whole text.
  assert.ok(document.token_count > documentPieces.join('').length / 8);

  // A question on the stored document.
  const { messages } = await generate(server, {
    model: 'kvd-tiny', messages: { messages: [{ role: 'user', content: 'Q:vig' }] },
    documents: [document.id], sampling: { temperature: 0 }, max_tokens: 16,
  }).done;
  const { texts, usage } = summarize(messages);
  assert.equal(texts[0], 'KSOHB');
  assert.equal(usage.cached_tokens, document.token_count);
  assert.ok(usage.prompt_tokens > document.token_count);

  assert.deepEqual(await unary(server.documents, 'Get', { id: document.id }), document);
  const listed = await unary(server.documents, 'List', { limit: 100 });
  assert.ok(listed.documents.some((d) => d.id === document.id));
  assert.equal(listed.has_more, false);
  assert.deepEqual(listed.documents.map((d) => d.id),
                   (await server.fetch('/v1/documents?limit=100')).data.map((d) => d.id));
  await assert.rejects(unary(server.documents, 'List', { limit: 101 }),
                       grpcError(Status.INVALID_ARGUMENT, { 'kvd-error-param': 'limit' }));

  const recut = await unary(server.documents, 'Recut', { id: document.id, ratio: 0.25 });
  assert.equal(recut.id, document.id);
  assert.ok(Math.abs(recut.ratio - 0.25) < 0.01, `${recut.ratio}`);
  assert.ok(recut.kept_entries < document.kept_entries);
  assert.equal((await unary(server.documents, 'Get', { id: document.id })).kept_entries,
               recut.kept_entries);
  // Growing needs keep_full.
  await assert.rejects(unary(server.documents, 'Recut', { id: document.id, ratio: 0.5 }),
                       grpcError(Status.INVALID_ARGUMENT, { 'kvd-error-param': 'ratio' }));

  assert.deepEqual(await unary(server.documents, 'Delete', { id: document.id }),
                   { id: document.id, deleted: true });
  await assert.rejects(unary(server.documents, 'Get', { id: document.id }),
                       grpcError(Status.NOT_FOUND));
  await assert.rejects(unary(server.documents, 'Delete', { id: document.id }),
                       grpcError(Status.NOT_FOUND));

  // The header must come first, and once.
  await assert.rejects(upload(server, ['zix: WEK\n', 'vig: KSOHB\n'], null),
                       grpcError(Status.INVALID_ARGUMENT, { 'kvd-error-param': 'header' }));
  await assert.rejects(upload(server, [], null),
                       grpcError(Status.INVALID_ARGUMENT, { 'kvd-error-param': 'header' }));
  await assert.rejects(
    upload(server, documentPieces, { compression: { method: 'kvzip', ratio: 1.5 } }),
    grpcError(Status.INVALID_ARGUMENT, { 'kvd-error-param': 'compression.ratio' }));
  // A text that ends before the length its header declared (a cut-off upload) stores nothing.
  const stored = (await unary(server.documents, 'List', {})).documents.length;
  await assert.rejects(
    upload(server, documentPieces, { text_bytes: 1000, compression: { method: 'none' } }),
    grpcError(Status.INVALID_ARGUMENT, { 'kvd-error-param': 'text' }));
  await assert.rejects(upload(server, documentPieces, { text_bytes: -1 }),
                       grpcError(Status.INVALID_ARGUMENT, { 'kvd-error-param': 'header.text_bytes' }));
  assert.equal((await unary(server.documents, 'List', {})).documents.length, stored);
});

// Lists the services and asks for the file defining kvd.v1.DocumentService through one
// ServerReflectionInfo stream of `client`.
async function reflect(client) {
  const call = client.ServerReflectionInfo();
  const answers = [];
  const ended = new Promise((resolve, reject) => {
    call.on('data', (answer) => answers.push(answer));
    call.on('error', reject);
    call.on('end', resolve);
  });
  call.write({ list_services: '' });
  call.write({ file_containing_symbol: 'kvd.v1.DocumentService' });
  call.end();
  await ended;
  assert.equal(answers.length, 2);
  assert.equal(answers[0].message_response, 'list_services_response');
  const services = answers[0].list_services_response.service.map((s) => s.name);
  for (const name of ['kvd.v1.InferenceService', 'kvd.v1.DocumentService',
                      'grpc.health.v1.Health']) {
    assert.ok(services.includes(name), `${services}`);
  }
  assert.equal(answers[1].message_response, 'file_descriptor_response');
  const files = answers[1].file_descriptor_response.file_descriptor_proto
    .map((bytes) => Buffer.from(bytes).toString('latin1'));
  assert.ok(files.some((file) => file.includes('kvd/v1/documents.proto')));
}

test('health (grpc.health.v1) and reflection (grpc.reflection.v1alpha)', async () => {
  // No key needed: probes carry none.
  assert.deepEqual(await unary(server.health, 'Check', { service: '' }, { key: null }),
                   { status: 'SERVING' });
  await reflect(server.reflection.v1alpha);
});

test('gRPC requests are counted with protocol="grpc"', async () => {
  const labels = { tenant: 'alpha', protocol: 'grpc', status: '2xx' };
  const served = await server.metric('kvd_tenant_requests_total', labels);
  assert.ok(served > 0, 'the earlier tests made gRPC requests');
  const refused = await server.metric('kvd_tenant_requests_total', { ...labels, status: '4xx' });
  assert.ok(refused > 0, 'and refused some');
  const http = await server.metric('kvd_tenant_requests_total', { ...labels, protocol: 'http' });
  for (let i = 0; i < 3; ++i) {
    await generate(server, { model: 'kvd-tiny', prompt: 'the', max_tokens: 1 }).done;
  }
  await assert.rejects(
    generate(server, { model: 'kvd-tiny', prompt: 'the', sampling: { top_p: 2 } }).done,
    grpcError(Status.INVALID_ARGUMENT, { 'kvd-error-param': 'top_p' }));
  // A call is counted as it ends, which may be just after its client saw the end.
  await server.waitForMetric(
    `kvd_tenant_requests_total{model_name="kvd-tiny",protocol="grpc",status="2xx",tenant="alpha"} ${served + 3}`);
  assert.equal(await server.metric('kvd_tenant_requests_total', { ...labels, status: '4xx' }),
               refused + 1);
  assert.equal(await server.metric('kvd_tenant_requests_total', { ...labels, protocol: 'http' }),
               http, 'gRPC calls are not counted as HTTP ones');
});

// As HTTP counts /v1/documents requests, DocumentService calls count with protocol="grpc".
test('DocumentService calls are counted with protocol="grpc"', async () => {
       const labels = { tenant: 'alpha', protocol: 'grpc', status: '2xx' };
       const served = await server.metric('kvd_tenant_requests_total', labels);
       const document = await upload(server, documentPieces, {
         compression: { method: 'kvzip', ratio: 0.5 },
       });
       await unary(server.documents, 'Get', { id: document.id });
       await unary(server.documents, 'List', {});
       await unary(server.documents, 'Delete', { id: document.id });
       assert.equal(await server.metric('kvd_tenant_requests_total', labels), served + 4);
     });

test('draining: new calls get UNAVAILABLE while a running stream finishes', async () => {
  // The drain waits for the stream however slow the build (sanitizers) or the machine.
  const drainSeconds = 600;
  const draining = await Kvd.start(['server:', `  drain_timeout_seconds: ${drainSeconds}`]);
  try {
    const request = { model: 'kvd-tiny', prompt: 'the', max_tokens: 2000, ignore_eos: true };
    const running = generate(draining, request);
    await running.first;
    // The client stops reading: HTTP/2 flow control then holds the reply in flight however fast
    // the model is, so the drain is still on for the calls below.
    running.call.pause();
    draining.process.kill('SIGTERM');
    await draining.waitForLog(/draining: 1 replies in flight/);
    await assert.rejects(
      generate(draining, { ...request, max_tokens: 1 }).done,
      grpcError(Status.UNAVAILABLE, { 'retry-after': /^[1-9]\d*$/ }));
    await assert.rejects(unary(draining.inference, 'ListModels', {}),
                         (error) => grpcError(Status.UNAVAILABLE)(error) &&
                                    /shutting down/.test(error.details));
    const seen = running.messages.length;
    assert.deepEqual(await unary(draining.health, 'Check', { service: '' }, { key: null }),
                     { status: 'NOT_SERVING' });
    running.call.resume();
    const { messages } = await running.done;
    assert.ok(messages.length > seen, 'the stream went on after the refusals');
    const { texts, completions, usage } = summarize(messages);
    assert.equal(completions.length, 1);
    assert.equal(completions[0].finish_reason, 'FINISH_REASON_LENGTH');
    assert.equal(usage.completion_tokens, 2000);
    assert.ok(texts[0].length > 0);
    await draining.waitForLog(/drained; 0 replies cut off/, drainSeconds);
  } finally {
    assert.equal(await draining.stop(), 0, draining.logs);
  }
});
