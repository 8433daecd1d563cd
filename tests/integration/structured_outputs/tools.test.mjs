// Function calling through the official OpenAI SDK: the bundled model with a chat template that
// teaches hermes tool calls, the same with Llama 3's JSON calls, and random weights (whose output
// is otherwise noise). Forced calls (`required`, a named function) always parse, and their
// arguments validate by zod (the SDK's parse()) and by ajv, over 200 seeded requests at
// temperature 1; calls stream as delta.tool_calls and give what the whole reply gives.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodFunction } from 'openai/helpers/zod';
import { z } from 'zod';
import Ajv from 'ajv';
import { inBatches, startKvd, tinyModelVariant } from './kvd_process.mjs';

const model = 'kvd-tiny';
// Bounded strings, numbers and lists: every call ends within an ordinary 200-token budget.
const Weather = z.object({
  city: z.string().max(10),
  unit: z.enum(['celsius', 'fahrenheit']),
  days: z.number().int().min(1).max(7),
});
const Search = z.object({
  query: z.string().max(12),
  tags: z.array(z.string().max(5)).max(2),
  exact: z.boolean().nullable(),
});
const tools = [
  zodFunction({ name: 'get_weather', parameters: Weather, description: 'Weather in a city' }),
  zodFunction({ name: 'search', parameters: Search }),
];
const zodOf = { get_weather: Weather, search: Search };
const ajv = new Ajv({ strict: false });
const validateOf = Object.fromEntries(
  tools.map((tool) => [tool.function.name, ajv.compile(tool.function.parameters)]));

const messages = (i) => [{ role: 'user', content: `What should I do about request ${i}?` }];

// A call validates: a known function, arguments that parse and pass zod and ajv.
function checkCall(call, label) {
  assert.equal(call.type, 'function', label);
  assert.match(call.id, /^call_/, label);
  const name = call.function.name;
  assert.ok(name in zodOf, `${label}: unknown function ${name}`);
  const args = JSON.parse(call.function.arguments);
  assert.ok(zodOf[name].safeParse(args).success, `${label}: ${call.function.arguments}`);
  assert.ok(validateOf[name](args),
            `${label}: ${JSON.stringify(validateOf[name].errors)} in ${call.function.arguments}`);
  if (call.function.parsed_arguments !== undefined) {
    assert.deepEqual(call.function.parsed_arguments, args, label);
  }
}

// Streams `request` and gathers what the chunks say: content, calls by index, finish reason.
async function streamed(client, request) {
  const stream = await client.chat.completions.create({ ...request, stream: true });
  let content = '';
  let finish = null;
  const calls = [];
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    content += choice.delta?.content ?? '';
    for (const fragment of choice.delta?.tool_calls ?? []) {
      if (fragment.id !== undefined) {
        assert.equal(fragment.index, calls.length);
        calls.push({ id: fragment.id, type: fragment.type, name: fragment.function.name,
                     arguments: '' });
      }
      calls[fragment.index].arguments += fragment.function.arguments ?? '';
    }
    finish = choice.finish_reason ?? finish;
  }
  return { content, calls, finish };
}

function forcedCallTests(variant, templateFile, randomSeed, count) {
  describe(variant, () => {
    let server;
    let client;
    before(async () => {
      server = await startKvd({ modelDir: tinyModelVariant({ templateFile, randomSeed }) });
      client = new OpenAI({ apiKey: 'unused', baseURL: server.baseURL, maxRetries: 0 });
    });
    after(async () => {
      assert.equal(await server.stop(), 0, server.logs());
    });

    test(`a named function: ${count} seeded calls at temperature 1 all validate`, async () => {
      const outputs = await inBatches(count, 16, (i) => client.chat.completions.parse({
        model, messages: messages(i), tools, temperature: 1, seed: i, max_tokens: 200,
        tool_choice: { type: 'function', function: { name: i % 2 ? 'search' : 'get_weather' } },
      }));
      for (const [i, completion] of outputs.entries()) {
        const choice = completion.choices[0];
        const label = `seed ${i}`;
        assert.equal(choice.finish_reason, 'stop', label);
        assert.equal(choice.message.content, null, label);
        assert.equal(choice.message.tool_calls.length, 1, label);
        const call = choice.message.tool_calls[0];
        assert.equal(call.function.name, i % 2 ? 'search' : 'get_weather', label);
        checkCall(call, label);
      }
    });

    test(`required: ${count} seeded calls at temperature 1 all validate`, async () => {
      const outputs = await inBatches(count, 16, (i) => client.chat.completions.parse({
        model, messages: messages(i), tools, temperature: 1, seed: 5000 + i, max_tokens: 200,
        tool_choice: 'required', parallel_tool_calls: false,
      }));
      const names = new Set();
      for (const [i, completion] of outputs.entries()) {
        const choice = completion.choices[0];
        const label = `seed ${5000 + i}`;
        assert.equal(choice.finish_reason, 'tool_calls', label);
        assert.equal(choice.message.tool_calls.length, 1, label);
        checkCall(choice.message.tool_calls[0], label);
        names.add(choice.message.tool_calls[0].function.name);
      }
      assert.equal(names.size, 2, 'the model chose among the functions');
    });

    test('parallel calls: each of several calls validates, the last within max_tokens', async () => {
      const outputs = await inBatches(count, 16, (i) => client.chat.completions.create({
        model, messages: messages(i), tools, temperature: 1, seed: 9000 + i, max_tokens: 200,
        tool_choice: 'required',
      }));
      for (const [i, completion] of outputs.entries()) {
        const choice = completion.choices[0];
        const calls = choice.message.tool_calls;
        // The model may keep adding calls; the constraint leaves room to end the last whole.
        assert.equal(choice.finish_reason, 'tool_calls', `seed ${9000 + i}`);
        assert.ok(calls.length >= 1, `seed ${9000 + i}`);
        calls.forEach((call, k) => checkCall(call, `seed ${9000 + i} call ${k}`));
        assert.equal(new Set(calls.map((call) => call.id)).size, calls.length);
      }
    });

    test('a seed gives the same calls streamed and not', async () => {
      for (const seed of [1, 2, 3]) {
        for (const tool_choice of ['required', { type: 'function', function: { name: 'search' } }]) {
          const request = { model, messages: messages(seed), tools, temperature: 1, seed,
                            max_tokens: 400, tool_choice };
          const whole = (await client.chat.completions.create(request)).choices[0];
          const stream = await streamed(client, request);
          assert.equal(stream.finish, whole.finish_reason);
          assert.equal(stream.content, whole.message.content ?? '');
          assert.deepEqual(
            stream.calls.map(({ type, name, arguments: args }) => ({ type, name, args })),
            whole.message.tool_calls.map((call) => ({ type: call.type, name: call.function.name,
                                                      args: call.function.arguments })));
          stream.calls.forEach((call) => assert.match(call.id, /^call_/));
        }
      }
    });
  });
}

forcedCallTests('hermes', 'hermes_tools.jinja', undefined, 200);
forcedCallTests('random', 'hermes_tools.jinja', 11, 200);
forcedCallTests('llama3', 'llama3_json_tools.jinja', undefined, 40);

describe('auto', () => {
  let server;
  let client;
  before(async () => {
    server = await startKvd({ modelDir: tinyModelVariant({ templateFile: 'hermes_tools.jinja' }) });
    client = new OpenAI({ apiKey: 'unused', baseURL: server.baseURL, maxRetries: 0 });
  });
  after(async () => {
    assert.equal(await server.stop(), 0, server.logs());
  });

  // The model's own words, made a call by a constraint on the text: the parser turns them into
  // tool_calls and content, streamed and not.
  test('a call the model writes becomes tool_calls, with the text before it as content', async () => {
    const written = 'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": ' +
                    '{"city": "Oslo", "unit": "celsius", "days": 2}}\n</tool_call>';
    const request = { model, messages: messages(0), tools, max_tokens: 400,
                      structured_outputs: { choice: [written] } };
    const whole = (await client.chat.completions.create(request)).choices[0];
    assert.equal(whole.finish_reason, 'tool_calls');
    assert.equal(whole.message.content, 'Checking.');
    assert.equal(whole.message.tool_calls.length, 1);
    assert.equal(whole.message.tool_calls[0].function.name, 'get_weather');
    assert.equal(whole.message.tool_calls[0].function.arguments,
                 '{"city": "Oslo", "unit": "celsius", "days": 2}');
    const stream = await streamed(client, request);
    assert.equal(stream.finish, 'tool_calls');
    assert.equal(stream.content, 'Checking.');
    assert.equal(stream.calls[0].arguments, whole.message.tool_calls[0].function.arguments);
  });

  test('text that is no call stays content, and tool_choice none parses nothing', async () => {
    const written = 'No <tool_call> here';
    for (const tool_choice of ['auto', 'none']) {
      const completion = await client.chat.completions.create({
        model, messages: messages(0), tools, tool_choice, max_tokens: 400,
        structured_outputs: { choice: [written] },
      });
      assert.equal(completion.choices[0].message.content, written);
      assert.equal(completion.choices[0].message.tool_calls, undefined);
      assert.equal(completion.choices[0].finish_reason, 'stop');
    }
  });

  test('/tokenize renders the tools as chat does', async () => {
    const count = async (body) => {
      const response = await fetch(server.baseURL.replace(/\/v1$/, '/tokenize'), {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: messages(0), ...body }),
      });
      assert.equal(response.status, 200);
      return (await response.json()).count;
    };
    const plain = await count({});
    const withTools = await count({ tools });
    assert.ok(withTools > plain + 20, `${withTools} tokens with tools, ${plain} without`);
    const completion = await client.chat.completions.create({
      model, messages: messages(0), tools, max_tokens: 1 });
    assert.equal(completion.usage.prompt_tokens, withTools);
  });

  test('a conversation with calls and their results goes on', async () => {
    const completion = await client.chat.completions.create({
      model, tools, temperature: 1, seed: 3, max_tokens: 400,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      messages: [
        ...messages(1),
        { role: 'assistant', content: null,
          tool_calls: [{ id: 'call_a', type: 'function',
                         function: { name: 'search', arguments: '{"query": "x", "tags": []}' } }] },
        { role: 'tool', tool_call_id: 'call_a', content: 'nothing found' },
      ],
    });
    checkCall(completion.choices[0].message.tool_calls[0], 'after a result');
  });
});

test('a model whose chat template takes no tools answers 400', async () => {
  const server = await startKvd();
  try {
    const client = new OpenAI({ apiKey: 'unused', baseURL: server.baseURL, maxRetries: 0 });
    await assert.rejects(
      client.chat.completions.create({ model, messages: messages(0), tools }),
      (error) => error instanceof OpenAI.BadRequestError && error.param === 'tools' &&
                 /does not support tools/.test(error.message));
  } finally {
    assert.equal(await server.stop(), 0, server.logs());
  }
});
