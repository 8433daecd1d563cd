// kvd's Responses API (/v1/responses) driven by the clients that speak it, on the bundled model
// under a hermes tools template: the OpenAI SDK (create, streamed events, a function tool round
// trip through function_call_output under the hermes and llama3_json templates,
// previous_response_id, retrieve and delete, another tenant's id, text.format with a zod
// schema, refusals), the AI SDK's default OpenAI provider (generateText, streamText,
// generateObject, a tool loop) and LangChain's ChatOpenAI with useResponsesApi (invoke, stream,
// withStructuredOutput, bindTools with a named tool_choice).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { createOpenAI } from '@ai-sdk/openai';
import { generateObject, generateText, streamText, stepCountIs, tool } from 'ai';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import { kvdForTests, tenantLines, tinyModelVariant } from './kvd_process.mjs';

const server = kvdForTests({
  modelDir: tinyModelVariant({ templateFile: 'hermes_tools.jinja' }),
  configLines: tenantLines({ alpha: 'key-alpha', beta: 'key-beta' }),
});
const client = (apiKey = 'key-alpha') =>
  new OpenAI({ apiKey, baseURL: server().baseURL, maxRetries: 0 });

// The document question of docs/examples, without its chat markup: the bundled model answers
// it "KSOHB" greedily.
const documentQuestion =
  readFileSync(join(process.env.KVD_SOURCE_DIR, 'docs/examples/document_question.txt'), 'utf8')
    .replace('<|start_header_id|>user<|end_header_id|>\n\n', '')
    .replace('<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n', '');
const answer = 'KSOHB';

const weatherParameters = {
  type: 'object',
  properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['C', 'F'] } },
  required: ['city', 'unit'],
  additionalProperties: false,
};
const weatherTool = { type: 'function', name: 'get_weather', description: 'The weather in a city',
                      parameters: weatherParameters, strict: true };
const Person = z.object({ name: z.string(), age: z.number().int(), tags: z.array(z.string()) });

test('a response answers as chat completions does', async () => {
  const response = await client().responses.create({
    model: 'kvd-tiny', input: documentQuestion, temperature: 0, max_output_tokens: 40 });
  assert.match(response.id, /^resp_/);
  assert.equal(response.object, 'response');
  assert.equal(response.status, 'completed');
  assert.equal(response.output_text, answer);
  assert.equal(response.output.length, 1);
  assert.equal(response.output[0].type, 'message');
  assert.equal(response.output[0].content[0].type, 'output_text');
  const chat = await client().chat.completions.create({
    model: 'kvd-tiny', messages: [{ role: 'user', content: documentQuestion }], temperature: 0 });
  assert.equal(response.usage.input_tokens, chat.usage.prompt_tokens);
  assert.equal(response.usage.output_tokens, chat.usage.completion_tokens);
  assert.equal(response.usage.total_tokens,
               response.usage.input_tokens + response.usage.output_tokens);
});

test('a streamed response sends the typed events and ends as the whole one', async () => {
  const body = { model: 'kvd-tiny', input: documentQuestion, temperature: 0,
                 max_output_tokens: 40 };
  const whole = await client().responses.create(body);
  const stream = await client().responses.create({ ...body, stream: true });
  const types = [];
  let text = '';
  let completed;
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
    if (event.type === 'response.completed') completed = event.response;
  }
  assert.deepEqual(types.slice(0, 4), ['response.created', 'response.in_progress',
                                       'response.output_item.added',
                                       'response.content_part.added']);
  assert.deepEqual(types.slice(-4), ['response.output_text.done', 'response.content_part.done',
                                     'response.output_item.done', 'response.completed']);
  assert.equal(text, answer);
  assert.equal(completed.output[0].content[0].text, whole.output_text);
  assert.deepEqual(completed.usage, whole.usage);
  const helper = await client().responses.stream(body).finalResponse();
  assert.equal(helper.output_text, answer);
});

test('max_output_tokens leaves a response incomplete', async () => {
  const response = await client().responses.create({
    model: 'kvd-tiny', input: documentQuestion, temperature: 0, max_output_tokens: 2 });
  assert.equal(response.status, 'incomplete');
  assert.deepEqual(response.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(response.usage.output_tokens, 2);
});

// A function call round trip under each tool-call syntax the templates teach.
for (const templateFile of ['hermes_tools.jinja', 'llama3_json_tools.jinja']) {
  describe(templateFile, () => {
    const toolServer = kvdForTests({ modelDir: tinyModelVariant({ templateFile }),
                                     configLines: tenantLines({ alpha: 'key-alpha' }) });
    const toolClient = () => new OpenAI({ apiKey: 'key-alpha', baseURL: toolServer().baseURL,
                                          maxRetries: 0 });

    test('a function call round trip, by previous_response_id and by items', async () => {
      const first = await toolClient().responses.create({
        model: 'kvd-tiny', input: 'What is the weather in Paris?', tools: [weatherTool],
        tool_choice: { type: 'function', name: 'get_weather' }, max_output_tokens: 200 });
      const calls = first.output.filter((item) => item.type === 'function_call');
      assert.equal(calls.length, 1, JSON.stringify(first.output));
      assert.equal(calls[0].name, 'get_weather');
      assert.match(calls[0].call_id, /^call_/);
      const args = JSON.parse(calls[0].arguments);
      assert.equal(typeof args.city, 'string');
      assert.ok(['C', 'F'].includes(args.unit));

      const output = { type: 'function_call_output', call_id: calls[0].call_id,
                       output: 'sunny, 21 degrees' };
      const continued = await toolClient().responses.create({
        model: 'kvd-tiny', previous_response_id: first.id, input: [output], tools: [weatherTool],
        max_output_tokens: 20, temperature: 0 });
      assert.equal(continued.previous_response_id, first.id);
      // The continued response's input: the first request's, its call, and the call's output;
      // the SDK pages through them one at a time.
      const listed = [];
      for await (const item of toolClient().responses.inputItems.list(continued.id,
                                                                       { order: 'asc', limit: 1 })) {
        listed.push(item);
      }
      assert.deepEqual(listed.map((item) => item.type),
                       ['message', 'function_call', 'function_call_output'], JSON.stringify(listed));
      assert.equal(listed[0].content[0].text, 'What is the weather in Paris?');
      assert.equal(listed[1].call_id, calls[0].call_id);
      assert.equal(listed[2].output, 'sunny, 21 degrees');
      assert.equal(new Set(listed.map((item) => item.id)).size, 3);
      // The conversation up to the call was computed by the first request (llama3_json's
      // template prints the tools into the last user turn only, so its turns share no prefix).
      if (templateFile === 'hermes_tools.jinja') {
        assert.ok(continued.usage.input_tokens > first.usage.input_tokens);
        assert.ok(continued.usage.input_tokens_details.cached_tokens > 0,
                  JSON.stringify(continued.usage));
      }

      const byItems = await toolClient().responses.create({
        model: 'kvd-tiny', store: false, tools: [weatherTool], max_output_tokens: 20,
        temperature: 0,
        input: [{ role: 'user', content: 'What is the weather in Paris?' }, ...first.output, output] });
      assert.equal(byItems.output_text, continued.output_text);
      assert.equal(byItems.usage.input_tokens, continued.usage.input_tokens);
    });
  });
}

test('stored responses are retrieved and deleted by their own tenant only', async () => {
  const response = await client().responses.create({
    model: 'kvd-tiny', input: documentQuestion, temperature: 0, max_output_tokens: 8,
    metadata: { purpose: 'test' } });
  const retrieved = await client().responses.retrieve(response.id);
  assert.deepEqual(retrieved, response);
  assert.deepEqual(retrieved.metadata, { purpose: 'test' });
  await assert.rejects(client('key-beta').responses.retrieve(response.id),
                       (error) => error instanceof OpenAI.NotFoundError);
  await assert.rejects(
    client('key-beta').responses.create({ model: 'kvd-tiny', input: 'x',
                                          previous_response_id: response.id }),
    (error) => error instanceof OpenAI.NotFoundError && error.param === 'previous_response_id');
  await assert.rejects(client('key-beta').responses.inputItems.list(response.id),
                       (error) => error instanceof OpenAI.NotFoundError);
  await assert.rejects(client('key-beta').responses.delete(response.id),
                       (error) => error instanceof OpenAI.NotFoundError);

  await client().responses.delete(response.id);
  await assert.rejects(client().responses.retrieve(response.id),
                       (error) => error instanceof OpenAI.NotFoundError);
  const unstored = await client().responses.create({
    model: 'kvd-tiny', input: 'x', max_output_tokens: 2, store: false });
  assert.equal(unstored.store, false);
  await assert.rejects(client().responses.retrieve(unstored.id),
                       (error) => error instanceof OpenAI.NotFoundError);
});

test('text.format with a zod schema parses and validates at temperature 1', async () => {
  for (let seed = 0; seed < 5; ++seed) {
    const parsed = await client().responses.parse({
      model: 'kvd-tiny', input: 'Describe a person.', temperature: 1, max_output_tokens: 200,
      seed, text: { format: zodTextFormat(Person, 'person') } });
    assert.equal(parsed.status, 'completed');
    assert.ok(Person.safeParse(parsed.output_parsed).success, parsed.output_text);
  }
});

test('what kvd does not do is refused naming the field', async () => {
  const refusals = [
    [{ tools: [{ type: 'web_search' }] }, 'tools[0]'],
    [{ reasoning: { effort: 'high' } }, 'reasoning'],
    [{ background: true }, 'background'],
    [{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] },
     'input[0].content[0]'],
    [{ text: { format: { type: 'xml' } } }, 'text.format.type'],
  ];
  for (const [fields, param] of refusals) {
    await assert.rejects(
      client().responses.create({ model: 'kvd-tiny', input: 'x', ...fields }),
      (error) => error instanceof OpenAI.BadRequestError && error.param === param,
      JSON.stringify(fields));
  }
});

test('the AI SDK\'s default OpenAI provider: text, stream, object, tool loop', async () => {
  const openai = createOpenAI({ baseURL: server().baseURL, apiKey: 'key-alpha' });
  const model = openai('kvd-tiny');
  const text = await generateText({ model, prompt: documentQuestion, temperature: 0,
                                    maxOutputTokens: 40 });
  assert.equal(text.text, answer);
  const streamed = streamText({ model, prompt: documentQuestion, temperature: 0,
                                maxOutputTokens: 40 });
  let joined = '';
  for await (const piece of streamed.textStream) joined += piece;
  assert.equal(joined, answer);

  const object = await generateObject({ model, schema: Person, prompt: 'Describe a person.',
                                        temperature: 1, maxOutputTokens: 200 });
  assert.ok(Person.safeParse(object.object).success);

  const looped = await generateText({
    model, prompt: 'What is the weather in Paris?', maxOutputTokens: 200,
    tools: { get_weather: tool({ description: 'The weather in a city',
                                 inputSchema: z.object({ city: z.string() }),
                                 execute: async ({ city }) => `sunny in ${city}` }) },
    prepareStep: ({ stepNumber }) => ({ toolChoice: stepNumber === 0 ? 'required' : 'none' }),
    stopWhen: stepCountIs(2),
  });
  assert.equal(looped.steps.length, 2);
  assert.equal(looped.steps[0].toolCalls.length >= 1, true);
  assert.equal(typeof looped.steps[0].toolCalls[0].input.city, 'string');
  assert.match(looped.steps[0].toolResults[0].output, /^sunny in /);
});

test('LangChain ChatOpenAI on the Responses API', async () => {
  const chat = new ChatOpenAI({ model: 'kvd-tiny', useResponsesApi: true, temperature: 0,
                                maxTokens: 40, apiKey: 'key-alpha',
                                configuration: { baseURL: server().baseURL } });
  const reply = await chat.invoke(documentQuestion);
  assert.equal(reply.text, answer);
  let streamed = '';
  for await (const chunk of await chat.stream(documentQuestion)) streamed += chunk.text;
  assert.equal(streamed, answer);

  const structured = new ChatOpenAI({ model: 'kvd-tiny', useResponsesApi: true, temperature: 1,
                                      maxTokens: 200, apiKey: 'key-alpha',
                                      configuration: { baseURL: server().baseURL } })
    .withStructuredOutput(Person);
  assert.ok(Person.safeParse(await structured.invoke('Describe a person.')).success);

  const withTools = new ChatOpenAI({ model: 'kvd-tiny', useResponsesApi: true, maxTokens: 200,
                                     apiKey: 'key-alpha',
                                     configuration: { baseURL: server().baseURL } })
    .bindTools([{ type: 'function', function: { name: 'get_weather',
                                                description: 'The weather in a city',
                                                parameters: weatherParameters } }],
               { tool_choice: 'get_weather' });
  const called = await withTools.invoke('What is the weather in Paris?');
  assert.equal(called.tool_calls.length, 1, JSON.stringify(called.invalid_tool_calls));
  assert.equal(called.tool_calls[0].name, 'get_weather');
  assert.equal(typeof called.tool_calls[0].args.city, 'string');
});
