// kvd serve driven by the official OpenAI SDK (a real client): completions, chat, streaming
// with usage, n, logprobs, stop strings, the SDK's error classes, and an aborted stream.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startKvd } from './kvd_process.mjs';

const source = process.env.KVD_SOURCE_DIR;
const sha256 = (text) => createHash('sha256').update(text).digest('hex');

let server;
let baseURL;

const client = (apiKey) => new OpenAI({ apiKey, baseURL, maxRetries: 0 });

// The document question of docs/examples, without its chat markup.
const prompt = readFileSync(join(source, 'docs/examples/document_question.txt'), 'utf8');
const question = prompt
  .replace('<|start_header_id|>user<|end_header_id|>\n\n', '')
  .replace('<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n', '');

before(async () => {
  server = await startKvd({
    configLines: [
      'tenants:',
      '  - id: alpha',
      `    key_sha256: ["${sha256('key-alpha')}"]`,
      '  - id: limited',
      `    key_sha256: ["${sha256('key-limited')}"]`,
      '    requests_per_minute: 1',
    ],
  });
  baseURL = server.baseURL;
});

after(async () => {
  assert.equal(await server.stop(), 0, server.logs());
});

test('completions answer the document question', async () => {
  const completion = await client('key-alpha').completions.create({
    model: 'kvd-tiny', prompt, max_tokens: 16, temperature: 0,
  });
  assert.equal(completion.choices[0].text, 'KSOHB');
  assert.equal(completion.choices[0].finish_reason, 'stop');
  assert.ok(completion.usage.prompt_tokens > 100);
});

test('chat completions use the chat template', async () => {
  const chat = await client('key-alpha').chat.completions.create({
    model: 'kvd-tiny', messages: [{ role: 'user', content: question }], temperature: 0,
  });
  assert.equal(chat.choices[0].message.role, 'assistant');
  assert.equal(chat.choices[0].message.content, 'KSOHB');
});

test('streaming with include_usage ends with a usage chunk', async () => {
  const stream = await client('key-alpha').chat.completions.create({
    model: 'kvd-tiny', messages: [{ role: 'user', content: question }], temperature: 0,
    stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let role;
  let finish;
  let usage;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      role ??= choice.delta.role;
      text += choice.delta.content ?? '';
      finish = choice.finish_reason ?? finish;
    }
  }
  assert.equal(role, 'assistant');
  assert.equal(text, 'KSOHB');
  assert.equal(finish, 'stop');
  assert.ok(usage.completion_tokens > 0);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
});

test('n = 2 returns two choices', async () => {
  const completion = await client('key-alpha').completions.create({
    model: 'kvd-tiny', prompt: 'the old river', n: 2, max_tokens: 8, temperature: 1.2, seed: 3,
    ignore_eos: true,
  });
  assert.equal(completion.choices.length, 2);
  assert.deepEqual(completion.choices.map((c) => c.index), [0, 1]);
  assert.equal(completion.usage.completion_tokens, 16);
});

test('chat logprobs with alternatives', async () => {
  const chat = await client('key-alpha').chat.completions.create({
    model: 'kvd-tiny', messages: [{ role: 'user', content: question }], temperature: 0,
    logprobs: true, top_logprobs: 3, max_completion_tokens: 4,
  });
  const content = chat.choices[0].logprobs.content;
  assert.equal(content.length, chat.usage.completion_tokens);
  for (const entry of content) {
    assert.ok(entry.logprob <= 0);
    assert.equal(entry.top_logprobs.length, 3);
    assert.equal(entry.top_logprobs[0].logprob >= entry.top_logprobs[1].logprob, true);
  }
  assert.equal(content[0].token, 'K');
});

test('a stop string cuts the text before it', async () => {
  const completion = await client('key-alpha').completions.create({
    model: 'kvd-tiny', prompt, max_tokens: 16, temperature: 0, stop: ['OH'],
  });
  assert.equal(completion.choices[0].text, 'KS');
  assert.equal(completion.choices[0].finish_reason, 'stop');
});

test('errors arrive as the SDK error classes', async () => {
  await assert.rejects(
    client('wrong-key').completions.create({ model: 'kvd-tiny', prompt: 'x' }),
    OpenAI.AuthenticationError);
  await assert.rejects(
    client('key-alpha').completions.create({ model: 'kvd-tiny', prompt: 'x', temperature: 9 }),
    (error) => error instanceof OpenAI.BadRequestError && error.param === 'temperature');
  await assert.rejects(
    client('key-alpha').completions.create({ model: 'no-such-model', prompt: 'x' }),
    OpenAI.NotFoundError);
  // One request per minute for `limited`: the second is refused while `alpha` is still served.
  await client('key-limited').completions.create({ model: 'kvd-tiny', prompt: 'x', max_tokens: 1 });
  await assert.rejects(
    client('key-limited').completions.create({ model: 'kvd-tiny', prompt: 'x', max_tokens: 1 }),
    (error) => error instanceof OpenAI.RateLimitError &&
      Number(error.headers.get('retry-after')) > 0);
  const served = await client('key-alpha').completions.create({
    model: 'kvd-tiny', prompt: 'x', max_tokens: 1,
  });
  assert.equal(served.choices.length, 1);
});

test('an aborted stream cancels its sequence', async () => {
  const controller = new AbortController();
  const stream = await client('key-alpha').completions.create({
    model: 'kvd-tiny', prompt: 'the', max_tokens: 1500, ignore_eos: true, stream: true,
  }, { signal: controller.signal });
  let chunks = 0;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'text_completion');
    if (++chunks === 3) {
      controller.abort();
      break;
    }
  }
  // The server logs the request as 499 (client closed) once it notices.
  for (let i = 0; i < 100 && !server.logs().includes('status=499'); ++i) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.ok(server.logs().includes('status=499'), server.logs());
});
