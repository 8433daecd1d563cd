// Structured outputs and forced tool calls as the agent frameworks ask for them, each over many
// seeds at temperature 1 within an ordinary 200-token budget: the Vercel AI SDK's generateObject
// and generateText with an object output (@ai-sdk/openai-compatible, strict JSON Schema),
// generateText with a required tool (calls in parallel, the SDK's default), LangChain's
// withStructuredOutput and bindTools with a named tool_choice. Each case tells, per
// seed, whether the reply parses and validates, by the framework's own zod check and by ajv.
// Shared by the test (every reply must) and the whitespace benchmark (how many do).
import { generateObject, generateText, Output, tool } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import Ajv from 'ajv/dist/2020.js';
import { inBatches } from './kvd_process.mjs';

export const maxTokens = 200;
const model = 'kvd-tiny';
// Bounded strings and lists, as a schema for a real task would be.
const Person = z.object({
  name: z.string().max(12),
  age: z.number().int().min(0).max(130),
  role: z.enum(['admin', 'user', 'guest']),
  nickname: z.string().max(6).nullable(),
  scores: z.array(z.number()).max(3),
  manager: z.object({ name: z.string().max(8), active: z.boolean() }).nullable(),
});
const Weather = z.object({
  city: z.string().max(10),
  unit: z.enum(['celsius', 'fahrenheit']),
  days: z.number().int().min(1).max(7),
});
const ajv = new Ajv({ strict: false });
const validatePerson = ajv.compile(z.toJSONSchema(Person));
const validateWeather = ajv.compile(z.toJSONSchema(Weather));
const prompt = (i) => `Describe person number ${i} as JSON.`;

// A verdict: `ok`, or why not.
function personVerdict(finishReason, value) {
  if (finishReason !== 'stop') return { ok: false, why: `finished with ${finishReason}` };
  if (!Person.safeParse(value).success || !validatePerson(value)) {
    return { ok: false, why: `does not validate: ${JSON.stringify(value)}` };
  }
  return { ok: true };
}

// A failure the framework throws (a reply it cannot parse) is a verdict too.
async function verdictOf(run) {
  try {
    return await run();
  } catch (error) {
    return { ok: false, why: `${error.name}: ${error.message}`.slice(0, 300) };
  }
}

// The cases against kvd at `baseURL`, each `extraBody` fields added to every request body.
export function frameworkCases(baseURL, extraBody = {}) {
  const provider = createOpenAICompatible({ name: 'kvd', baseURL, apiKey: 'unused',
                                            supportsStructuredOutputs: true });
  const providerOptions = { kvd: extraBody };
  const chat = new ChatOpenAI({ model, apiKey: 'unused', configuration: { baseURL },
                                temperature: 1, maxTokens, maxRetries: 0, modelKwargs: extraBody });
  return {
    'AI SDK generateObject': (seed) => verdictOf(async () => {
      const result = await generateObject({
        model: provider(model), schema: Person, prompt: prompt(seed), temperature: 1, seed,
        maxOutputTokens: maxTokens, maxRetries: 0, providerOptions });
      return personVerdict(result.finishReason, result.object);
    }),
    'AI SDK generateText with an object output': (seed) => verdictOf(async () => {
      const result = await generateText({
        model: provider(model), output: Output.object({ schema: Person }), prompt: prompt(seed),
        temperature: 1, seed, maxOutputTokens: maxTokens, maxRetries: 0, providerOptions });
      return personVerdict(result.finishReason, result.output);
    }),
    'AI SDK generateText with a required tool': (seed) => verdictOf(async () => {
      const result = await generateText({
        model: provider(model), prompt: `What is the weather for trip ${seed}?`, temperature: 1,
        seed, maxOutputTokens: maxTokens, maxRetries: 0, providerOptions, toolChoice: 'required',
        tools: { get_weather: tool({ description: 'Weather in a city', inputSchema: Weather }) } });
      if (result.finishReason !== 'tool-calls' || result.toolCalls.length === 0) {
        return { ok: false, why: `finished with ${result.finishReason}, ` +
                                 `${result.toolCalls.length} calls: ${result.text}` };
      }
      for (const call of result.toolCalls) {
        if (call.invalid || !Weather.safeParse(call.input).success || !validateWeather(call.input)) {
          return { ok: false, why: `a call does not validate: ${JSON.stringify(call.input)}` };
        }
      }
      return { ok: true };
    }),
    'LangChain withStructuredOutput': (seed) => verdictOf(async () => {
      const structured = chat.withStructuredOutput(Person, { name: 'person', includeRaw: true });
      const { raw, parsed } = await structured.invoke(prompt(seed), { seed });
      return personVerdict(raw.response_metadata.finish_reason, parsed);
    }),
    'LangChain bindTools with a named tool_choice': (seed) => verdictOf(async () => {
      const bound = chat.bindTools(
        [{ name: 'get_weather', description: 'Weather in a city', schema: Weather }],
        { tool_choice: 'get_weather' });
      const reply = await bound.invoke(`What is the weather for trip ${seed}?`, { seed });
      if (reply.invalid_tool_calls.length > 0 || reply.tool_calls.length !== 1) {
        return { ok: false, why: `calls ${JSON.stringify(reply.tool_calls)}, invalid ` +
                                 JSON.stringify(reply.invalid_tool_calls) };
      }
      const args = reply.tool_calls[0].args;
      if (!Weather.safeParse(args).success || !validateWeather(args)) {
        return { ok: false, why: `does not validate: ${JSON.stringify(args)}` };
      }
      return { ok: true };
    }),
  };
}

// The verdicts of `run` on seeds [0, count), 16 at a time.
export function overSeeds(count, run) {
  return inBatches(count, 16, run);
}
