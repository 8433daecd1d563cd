// kvd's Anthropic Messages API driven by the official Anthropic SDK, on the bundled model under a
// hermes tools template: whole and streamed messages (greedy streamed equals whole, and the same
// as chat completions for the same conversation), stop sequences, a forced tool call and its
// tool_result round trip (read back from the prefix cache; under the llama3_json template too),
// countTokens, x-api-key, and errors in Anthropic's shape.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { kvdForTests, tenantLines, tinyModelVariant } from './kvd_process.mjs';

const server = kvdForTests({ modelDir: tinyModelVariant({ templateFile: 'hermes_tools.jinja' }),
                             configLines: tenantLines({ alpha: 'key-alpha' }) });
const anthropic = (apiKey = 'key-alpha') =>
  new Anthropic({ apiKey, baseURL: server().baseURL.replace(/\/v1$/, ''), maxRetries: 0 });

const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['C', 'F'] } },
    required: ['city', 'unit'],
  },
};
const system = 'You answer briefly.';
const question = { role: 'user', content: 'What is the weather in Paris?' };
// The document question of docs/examples, without its chat markup: the bundled model answers it.
const documentQuestion = {
  role: 'user',
  content: readFileSync(join(process.env.KVD_SOURCE_DIR, 'docs/examples/document_question.txt'),
                        'utf8')
    .replace('<|start_header_id|>user<|end_header_id|>\n\n', '')
    .replace('<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n', ''),
};

test('a message answers as chat completions does for the same conversation', async () => {
  const message = await anthropic().messages.create({
    model: 'kvd-tiny', max_tokens: 40, temperature: 0, system, messages: [documentQuestion],
  });
  const chat = await new OpenAI({ apiKey: 'key-alpha', baseURL: server().baseURL }).chat.completions
    .create({ model: 'kvd-tiny', max_tokens: 40, temperature: 0,
              messages: [{ role: 'system', content: system }, documentQuestion] });
  assert.deepEqual(message.content, [{ type: 'text', text: 'KSOHB' }]);
  assert.equal(message.type, 'message');
  assert.equal(message.role, 'assistant');
  assert.match(message.id, /^msg_/);
  assert.deepEqual(message.content, [{ type: 'text', text: chat.choices[0].message.content }]);
  assert.equal(message.stop_reason, chat.choices[0].finish_reason === 'length' ? 'max_tokens'
                                                                                 : 'end_turn');
  assert.equal(message.usage.input_tokens + message.usage.cache_read_input_tokens,
               chat.usage.prompt_tokens);
  assert.equal(message.usage.output_tokens, chat.usage.completion_tokens);
});

test('a stream sends Anthropic\'s events in order', async () => {
  const stream = anthropic().messages.stream({
    // Greedy, so that the answer is never an end-of-turn at once (a draw may be: no text block).
    model: 'kvd-tiny', max_tokens: 30, temperature: 0, top_k: 20, system, messages: [question] });
  const types = [];
  stream.on('streamEvent', (event) => types.push(event.type));
  const message = await stream.finalMessage();
  assert.deepEqual(types.slice(0, 2), ['message_start', 'content_block_start']);
  assert.deepEqual(types.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
  assert.ok(types.includes('content_block_delta'));
  assert.equal(message.content.length, 1);
  assert.ok(message.content[0].text.length > 0);
  assert.ok(message.usage.output_tokens > 0);
  assert.ok(['end_turn', 'max_tokens'].includes(message.stop_reason));
});

test('greedy streamed text equals greedy whole text', async () => {
  const body = { model: 'kvd-tiny', max_tokens: 40, temperature: 0, system,
                 messages: [documentQuestion] };
  const whole = await anthropic().messages.create(body);
  const streamed = await anthropic().messages.stream(body).finalMessage();
  assert.deepEqual(streamed.content, whole.content);
  assert.equal(streamed.stop_reason, whole.stop_reason);
  assert.deepEqual(streamed.usage, whole.usage);
});

test('a stop sequence ends the message and is named', async () => {
  const stopped = await anthropic().messages.create({
    model: 'kvd-tiny', max_tokens: 40, temperature: 0, messages: [documentQuestion],
    stop_sequences: ['xyz', 'OH'] });
  assert.equal(stopped.stop_reason, 'stop_sequence');
  assert.equal(stopped.stop_sequence, 'OH');
  assert.deepEqual(stopped.content, [{ type: 'text', text: 'KS' }]);
});

// A forced call and its tool_result round trip under each tool-call syntax the templates teach.
for (const templateFile of ['hermes_tools.jinja', 'llama3_json_tools.jinja']) {
  describe(templateFile, () => {
    const toolServer = kvdForTests({ modelDir: tinyModelVariant({ templateFile }),
                                     configLines: tenantLines({ alpha: 'key-alpha' }) });
    const toolClient = () => new Anthropic({ apiKey: 'key-alpha', maxRetries: 0,
                                             baseURL: toolServer().baseURL.replace(/\/v1$/, '') });

    test('a forced call validates, streams the same, and its result continues the turn',
         async () => {
      const body = { model: 'kvd-tiny', max_tokens: 200, temperature: 1, tools: [weather],
                     tool_choice: { type: 'tool', name: 'get_weather' }, messages: [question] };
      const call = await toolClient().messages.create(body);
      assert.equal(call.stop_reason, 'tool_use');
      const uses = call.content.filter((block) => block.type === 'tool_use');
      assert.equal(uses.length, 1);
      assert.match(uses[0].id, /^toolu_/);
      assert.equal(uses[0].name, 'get_weather');
      assert.equal(typeof uses[0].input.city, 'string');
      assert.ok(['C', 'F'].includes(uses[0].input.unit));

      const greedy = { ...body, temperature: 0 };
      const whole = await toolClient().messages.create(greedy);
      const streamed = await toolClient().messages.stream(greedy).finalMessage();
      assert.deepEqual(streamed.content.map(({ id, ...rest }) => rest),
                       whole.content.map(({ id, ...rest }) => rest));

      const result = await toolClient().messages.create({
        model: 'kvd-tiny', max_tokens: 20, temperature: 0, tools: [weather],
        messages: [question, { role: 'assistant', content: call.content },
                   { role: 'user', content: [{ type: 'tool_result', tool_use_id: uses[0].id,
                                               content: 'sunny, 21 degrees' }] }],
      });
      assert.ok(['end_turn', 'max_tokens', 'tool_use'].includes(result.stop_reason));
      // The conversation up to the call was computed by the first request (llama3_json's
      // template prints the tools into the last user turn only, so its turns share no prefix).
      if (templateFile === 'hermes_tools.jinja') {
        assert.ok(result.usage.cache_read_input_tokens > 0, JSON.stringify(result.usage));
      }
    });
  });
}

test('countTokens counts the prompt a message would read', async () => {
  const body = { model: 'kvd-tiny', system, tools: [weather], messages: [question] };
  const counted = await anthropic().messages.countTokens(body);
  const message = await anthropic().messages.create({ ...body, max_tokens: 1 });
  assert.equal(counted.input_tokens,
               message.usage.input_tokens + message.usage.cache_read_input_tokens);
});

test('errors come in Anthropic\'s shape with their status', async () => {
  await assert.rejects(
    anthropic('wrong-key').messages.create({ model: 'kvd-tiny', max_tokens: 5,
                                             messages: [question] }),
    (error) => error instanceof Anthropic.AuthenticationError && error.status === 401 &&
               error.error.type === 'error' && error.error.error.type === 'authentication_error');
  await assert.rejects(
    anthropic().messages.create({ model: 'kvd-tiny', max_tokens: 5, messages: [{
      role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png',
                                                           data: 'AA==' } }] }] }),
    (error) => error instanceof Anthropic.BadRequestError &&
               error.error.error.type === 'invalid_request_error' &&
               /image/.test(error.error.error.message));
  await assert.rejects(
    anthropic().messages.create({ model: 'kvd-tiny', max_tokens: 5, messages: [question],
                                  thinking: { type: 'enabled', budget_tokens: 1024 } }),
    (error) => error instanceof Anthropic.BadRequestError && /thinking/.test(error.message));
  await assert.rejects(
    anthropic().messages.create({ model: 'claude-x', max_tokens: 5, messages: [question] }),
    (error) => error instanceof Anthropic.NotFoundError &&
               error.error.error.type === 'not_found_error');
});
