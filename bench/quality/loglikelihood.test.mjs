// A loglikelihood multiple-choice evaluation run the way lm-evaluation-harness's
// `local-completions` model runs one: each candidate answer scored by one request
// {"prompt": context + continuation, "max_tokens": 0, "echo": true, "logprobs": 1}, whose
// continuation's token_logprobs are summed, the context's length in tokens known beforehand
// (the harness tokenizes it itself; here /tokenize does). Over the bundled model's document QA
// (the benchmark's documents, the value of a key, three other values of the same document as
// distractors), the pick of the most likely answer is at least as accurate as greedy answering,
// and each pick's tokens are scored as greedy when greedy answering got them. vLLM's
// prompt_logprobs say what echo says, and a scored prompt streams as it is returned whole.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';

import { BenchDocument } from './documents.mjs';

const kQuestions = 40;
const model = 'kvd-tiny';
const QuestionPrompt = (key) =>
  `\n\nQ:${key}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n`;
let server;
let client;
let origin;

before(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvd-loglikelihood-'));
  server = spawn(process.env.KVD_BINARY, [
    'serve', '--model', join(process.env.KVD_SOURCE_DIR, 'models/kvd-tiny'), '--data-dir',
    join(dir, 'data'), '--host', '127.0.0.1', '--port', '0']);
  let logs = '';
  origin = await new Promise((resolve, reject) => {
    server.stderr.on('data', (data) => {
      logs += data;
      const match = /serving .* on http:\/\/[^:]+:(\d+)/.exec(logs);
      if (match) resolve(`http://127.0.0.1:${match[1]}`);
    });
    server.on('exit', (code) => reject(new Error(`kvd exited with ${code}:\n${logs}`)));
  });
  client = new OpenAI({ apiKey: 'unused', baseURL: `${origin}/v1`, maxRetries: 0 });
});

after(() => server.kill('SIGTERM'));

async function tokenCount(prompt) {
  const response = await fetch(`${origin}/tokenize`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt }),
  });
  assert.equal(response.status, 200);
  return (await response.json()).count;
}

// The harness's loglikelihood of `continuation` after `context`, and whether each of its
// tokens is the most likely one.
async function loglikelihood(context, continuation) {
  const contextTokens = await tokenCount(context);
  const completion = await client.completions.create({
    model, prompt: context + continuation, max_tokens: 0, echo: true, logprobs: 1,
  });
  const choice = completion.choices[0];
  assert.equal(choice.text, context + continuation);
  assert.equal(choice.finish_reason, 'length');
  assert.equal(completion.usage.completion_tokens, 0);
  const { tokens, token_logprobs: logprobs, top_logprobs: tops } = choice.logprobs;
  assert.equal(tokens.length, await tokenCount(context + continuation));
  assert.equal(logprobs[0], null);
  let sum = 0;
  let greedy = true;
  for (let i = contextTokens; i < tokens.length; ++i) {
    assert.ok(logprobs[i] <= 0, `${logprobs[i]}`);
    sum += logprobs[i];
    greedy &&= logprobs[i] >= Math.max(...Object.values(tops[i])) - 1e-6;
  }
  return { sum, greedy };
}

test('loglikelihood multiple choice is as accurate as greedy answering', async (t) => {
  let picked = 0;
  let answered = 0;
  let asked = 0;
  for (let index = 0; asked < kQuestions; ++index) {
    const doc = BenchDocument(11, index, 100, 400, 1);
    const { key, value } = doc.questions[0];
    const distractors = doc.records.filter((r) => r.value !== value).map((r) => r.value);
    if (distractors.length === 0) continue;
    ++asked;
    const context = doc.text + QuestionPrompt(key);
    const answer = await client.completions.create({
      model, prompt: context, max_tokens: 8, temperature: 0,
    });
    const correct = answer.choices[0].text.trim() === value;
    answered += correct;
    const candidates = [value, ...distractors.slice(0, 3)];
    const scores = [];
    for (const candidate of candidates) scores.push(await loglikelihood(context, candidate));
    const best = scores.reduce((top, score, i) => (score.sum > scores[top].sum ? i : top), 0);
    picked += best === 0;
    if (correct) assert.ok(scores[0].greedy, `document ${index}: greedy wrote ${value}`);
  }
  t.diagnostic(`picked ${picked}, answered ${answered} of ${asked}`);
  assert.ok(picked >= answered, `picked ${picked}, answered ${answered} of ${asked}`);
  assert.ok(answered >= kQuestions * 0.8, `answered ${answered} of ${asked}`);
});

test("vLLM's prompt_logprobs agree with echo's, on completions and on chat", async () => {
  const prompt = BenchDocument(11, 0, 100, 200, 1).text;
  const echoed = (await client.completions.create({
    model, prompt, max_tokens: 0, echo: true, logprobs: 2 })).choices[0].logprobs;
  const scored = await client.completions.create({
    model, prompt, max_tokens: 1, prompt_logprobs: 2 });
  const listed = scored.choices[0].prompt_logprobs;
  assert.equal(listed.length, echoed.tokens.length);
  assert.equal(listed[0], null);
  for (let i = 1; i < listed.length; ++i) {
    const byText = Object.values(listed[i]).find((entry) => entry.decoded_token === echoed.tokens[i]);
    assert.ok(byText, `position ${i}: ${JSON.stringify(listed[i])}`);
    assert.ok(Math.abs(byText.logprob - echoed.token_logprobs[i]) < 1e-5, `position ${i}`);
    assert.ok(byText.rank >= 1);
    // The token and two alternatives, one of which may be the token itself.
    assert.ok(Object.keys(listed[i]).length >= 2 && Object.keys(listed[i]).length <= 3);
  }
  const chat = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Q:vig' }], max_tokens: 1, prompt_logprobs: 0 });
  assert.equal(chat.prompt_logprobs[0], null);
  assert.ok(chat.prompt_logprobs.length > 5);
  for (const position of chat.prompt_logprobs.slice(1)) {
    const [entry] = Object.values(position);
    assert.ok(entry.logprob <= 0 && entry.rank >= 1);
  }
});

test('scoring refusals: max_tokens 0 needs echo and logprobs, and at most 20 alternatives',
     async () => {
  await assert.rejects(
    client.completions.create({ model, prompt: 'the', max_tokens: 0 }),
    (error) => error.status === 400 && error.param === 'max_tokens');
  await assert.rejects(
    client.completions.create({ model, prompt: 'the', prompt_logprobs: 21 }),
    (error) => error.status === 400 && error.param === 'prompt_logprobs');
});

// The streamed chunks of a choice put together: its text and its logprobs' arrays.
async function Streamed(request) {
  const choices = [];
  for await (const chunk of await client.completions.create({ ...request, stream: true })) {
    for (const part of chunk.choices) {
      const choice = choices[part.index] ??= { text: '', logprobs: null, prompt_logprobs: null };
      choice.text += part.text;
      if (part.prompt_logprobs) choice.prompt_logprobs = part.prompt_logprobs;
      if (part.logprobs) {
        choice.logprobs ??= { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
        for (const key of Object.keys(choice.logprobs)) choice.logprobs[key].push(...part.logprobs[key]);
      }
    }
  }
  return choices;
}

test('a scored prompt streams as it is returned whole: echo with logprobs, and prompt_logprobs',
     async () => {
  const prompt = BenchDocument(12, 0, 100, 200, 1).text;
  for (const request of [
    { model, prompt, max_tokens: 0, echo: true, logprobs: 1 },
    { model, prompt, max_tokens: 4, echo: true, logprobs: 2, temperature: 0 },
    { model, prompt: [prompt, 'Q:vig'], max_tokens: 3, echo: true, logprobs: 0, temperature: 0,
      prompt_logprobs: 1 },
  ]) {
    const whole = await client.completions.create(request);
    const choices = await Streamed(request);
    assert.equal(choices.length, whole.choices.length);
    for (const [i, choice] of whole.choices.entries()) {
      assert.equal(choices[i].text, choice.text, JSON.stringify(request));
      assert.deepEqual(choices[i].logprobs, choice.logprobs, JSON.stringify(request));
      assert.deepEqual(choices[i].prompt_logprobs, choice.prompt_logprobs ?? null);
    }
  }
  const chatRequest = { model, messages: [{ role: 'user', content: 'Q:vig' }], max_tokens: 2,
                        prompt_logprobs: 1, temperature: 0 };
  const whole = await client.chat.completions.create(chatRequest);
  let streamed = null;
  let text = '';
  for await (const chunk of await client.chat.completions.create({ ...chatRequest,
                                                                   stream: true })) {
    if (chunk.prompt_logprobs) {
      assert.equal(streamed, null, 'the prompt is listed once');
      assert.equal(text, '', 'ahead of the text');
      streamed = chunk.prompt_logprobs;
    }
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  assert.deepEqual(streamed, whole.prompt_logprobs);
  assert.equal(text, whole.choices[0].message.content);
});
