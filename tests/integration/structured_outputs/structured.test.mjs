// Structured outputs through the official OpenAI SDK, sampling at temperature 1, on the bundled
// model and on random weights of its shape (whose output is otherwise noise):
// chat.completions.parse with a zod schema (zodResponseFormat), json_object, and vLLM's regex
// and choice. Every output parses and validates, by zod and by ajv (ajv-formats for the
// formats); a seed gives the same text streamed and not.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { inBatches, startKvd, tinyModelVariant } from './kvd_process.mjs';

let server;
let client;
const model = 'kvd-tiny';

before(async () => {
  server = await startKvd();
  client = new OpenAI({ apiKey: 'unused', baseURL: server.baseURL, maxRetries: 0 });
});

after(async () => {
  assert.equal(await server.stop(), 0, server.logs());
});

// Bounded strings and lists keep every value short enough to end within max_tokens.
const Person = z.object({
  name: z.string().max(12),
  age: z.number().int().min(0).max(130),
  role: z.enum(['admin', 'user', 'guest']),
  nickname: z.string().max(6).nullable(),
  scores: z.array(z.number()).max(3),
  manager: z.object({ name: z.string().max(8), active: z.boolean() }).nullable(),
});
const format = zodResponseFormat(Person, 'person');
const ajv = new Ajv({ strict: false });
addFormats(ajv);
const validate = ajv.compile(format.json_schema.schema);

const messages = (i) => [{ role: 'user', content: `Describe person number ${i} as JSON.` }];

// parse() with the zod schema on 200 seeds within an ordinary 200-token budget: every value is
// whole and validates, compact, its properties in the schema's order.
async function expectPeople(client) {
  const outputs = await inBatches(200, 16, (i) => client.chat.completions.parse({
    model, messages: messages(i), response_format: format, temperature: 1, seed: i,
    max_tokens: 200,
  }));
  for (const [i, completion] of outputs.entries()) {
    const choice = completion.choices[0];
    assert.equal(choice.finish_reason, 'stop', `seed ${i}: ${choice.message.content}`);
    const parsed = choice.message.parsed;
    assert.ok(Person.safeParse(parsed).success, `seed ${i}: ${choice.message.content}`);
    assert.ok(validate(JSON.parse(choice.message.content)),
              `seed ${i}: ${JSON.stringify(validate.errors)} in ${choice.message.content}`);
    assert.deepEqual(Object.keys(parsed), Object.keys(Person.shape));
    const outsideStrings = choice.message.content.replace(/"(?:[^"\\]|\\.)*"/g, '""');
    assert.doesNotMatch(outsideStrings, /[\n\t]|  /, `seed ${i}: ${choice.message.content}`);
  }
}

test('parse() with a zod schema: 200 seeded completions at temperature 1 all validate', async () => {
  await expectPeople(client);
});

test('a seed gives the same value streamed and not', async () => {
  for (const seed of [1, 2, 3]) {
    const request = { model, messages: messages(seed), response_format: format, temperature: 1,
                      seed, max_tokens: 1500 };
    const whole = await client.chat.completions.create(request);
    const stream = await client.chat.completions.create({ ...request, stream: true });
    let text = '';
    let finish = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(text, whole.choices[0].message.content);
    assert.equal(finish, whole.choices[0].finish_reason);
  }
});

// json_object on 40 seeds: every output that ends is a JSON object; how many end.
async function jsonObjectsEnded(client) {
  const outputs = await inBatches(40, 8, (i) => client.chat.completions.create({
    model, messages: messages(i), response_format: { type: 'json_object' }, temperature: 1,
    seed: 1000 + i, max_tokens: 1500,
  }));
  let ended = 0;
  for (const completion of outputs) {
    const choice = completion.choices[0];
    if (choice.finish_reason === 'length') continue;  // a string the model never closed
    ++ended;
    const value = JSON.parse(choice.message.content);
    assert.ok(typeof value === 'object' && value !== null && !Array.isArray(value),
              choice.message.content);
  }
  return ended;
}

test('any whitespace on request: pretty-printed JSON, which the bundled model prefers', async () => {
  const outputs = await inBatches(16, 16, (i) => client.chat.completions.create({
    model, messages: messages(i), response_format: format, temperature: 1, seed: i,
    max_tokens: 1500, structured_outputs: { disable_any_whitespace: false },
  }));
  const spaced = outputs.filter((completion) => /\n/.test(completion.choices[0].message.content));
  assert.ok(spaced.length >= 8, `${spaced.length} of 16 outputs hold a line break`);
  for (const completion of outputs) {
    const choice = completion.choices[0];
    if (choice.finish_reason === 'length') continue;
    assert.ok(validate(JSON.parse(choice.message.content)), choice.message.content);
  }
});

test('json_object: every output is a JSON object', async () => {
  const ended = await jsonObjectsEnded(client);
  assert.ok(ended >= 20, `only ${ended} of 40 ended`);
});

test('string formats validate as ajv-formats decides them', async () => {
  const schema = {
    type: 'object',
    properties: {
      born: { type: 'string', format: 'date' },
      id: { type: 'string', format: 'uuid' },
      email: { type: 'string', format: 'email' },
      seen: { type: 'string', format: 'date-time' },
      host: { type: 'string', format: 'ipv4' },
    },
    required: ['born', 'id', 'email', 'seen', 'host'],
    additionalProperties: false,
  };
  const check = ajv.compile(schema);
  const outputs = await inBatches(40, 8, (i) => client.chat.completions.create({
    model, messages: messages(i), temperature: 1, seed: 2000 + i, max_tokens: 1500,
    response_format: { type: 'json_schema', json_schema: { name: 'formats', schema } },
  }));
  let ended = 0;
  for (const completion of outputs) {
    const choice = completion.choices[0];
    if (choice.finish_reason === 'length') continue;  // an e-mail address without end
    ++ended;
    assert.ok(check(JSON.parse(choice.message.content)),
              `${JSON.stringify(check.errors)} in ${choice.message.content}`);
  }
  assert.ok(ended >= 5, `only ${ended} of 40 ended`);
});

test("max_tokens cutting a value finishes with 'length'", async () => {
  const completion = await client.chat.completions.create({
    model, messages: messages(0), response_format: format, temperature: 1, seed: 5,
    max_tokens: 3,
  });
  assert.equal(completion.choices[0].finish_reason, 'length');
});

test("vLLM's regex and choice on the completions endpoint", async () => {
  for (let seed = 0; seed < 20; ++seed) {
    const regex = await client.completions.create({
      model, prompt: 'Code:', temperature: 1, seed, max_tokens: 20,
      structured_outputs: { regex: '[A-Z]{2}-\\d{3}' },
    });
    assert.match(regex.choices[0].text, /^[A-Z]{2}-\d{3}$/);
    const choice = await client.completions.create({
      model, prompt: 'Answer:', temperature: 1, seed, max_tokens: 20,
      structured_outputs: { choice: ['yes', 'no', 'maybe later'] },
    });
    assert.ok(['yes', 'no', 'maybe later'].includes(choice.choices[0].text));
  }
});

test('a schema it cannot guarantee is a 400 naming the keyword', async () => {
  await assert.rejects(
    client.chat.completions.create({
      model, messages: messages(0),
      response_format: { type: 'json_schema',
                         json_schema: { name: 'x', schema: { type: 'number', multipleOf: 3 } } },
    }),
    (error) => error instanceof OpenAI.BadRequestError &&
               error.param === 'response_format.json_schema.schema' &&
               /multipleOf/.test(error.message));
});

describe('random weights', () => {
  let random;
  let randomClient;
  before(async () => {
    random = await startKvd({ modelDir: tinyModelVariant({ randomSeed: 23 }) });
    randomClient = new OpenAI({ apiKey: 'unused', baseURL: random.baseURL, maxRetries: 0 });
  });
  after(async () => {
    assert.equal(await random.stop(), 0, random.logs());
  });

  test('parse() with a zod schema: 200 seeded completions at temperature 1 all validate', async () => {
    await expectPeople(randomClient);
  });

  test('a seed gives the same value streamed and not', async () => {
    for (const seed of [1, 2]) {
      const request = { model, messages: messages(seed), response_format: format,
                        temperature: 1, seed, max_tokens: 1500 };
      const whole = await randomClient.chat.completions.create(request);
      const stream = await randomClient.chat.completions.create({ ...request, stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      assert.equal(text, whole.choices[0].message.content);
    }
  });

  test('json_object: every output that ends is a JSON object', async () => {
    const ended = await jsonObjectsEnded(randomClient);
    // 25 of 40 end on these seeds; the rest write keys the noise never closes.
    assert.ok(ended >= 10, `only ${ended} of 40 ended`);
  });
});
