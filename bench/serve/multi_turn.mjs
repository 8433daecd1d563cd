// A multi-turn chat workload for prefix caching, through the official OpenAI SDK: every
// conversation opens with the same long system prompt, and each of its turns resends the whole
// conversation so far (system prompt, earlier questions and answers) with a new question, as
// chat clients do. The first conversation runs alone, so its first request alone pays for the
// system prompt; the others then run --concurrency at a time. Prints one JSON document: per request its turn, TTFT
// and usage (prompt and cached tokens); and the summary (prompt tokens sent and computed, TTFT
// percentiles, the first request's TTFT against the later first turns', throughput).
//
// Usage: node multi_turn.mjs --base-url URL [--model M] [--conversations 8] [--turns 4]
//   [--concurrency 4] [--system-tokens 2000] [--question-words 12] [--max-tokens 24]
//   [--seed 1]
import OpenAI from 'openai';

import { Percentile } from './stats.mjs';
import { Prng, SubSeed, Words } from './workload.mjs';

function ParseArgs(argv) {
  const options = {
    'base-url': 'http://127.0.0.1:8000/v1', model: 'kvd-tiny', conversations: 8, turns: 4,
    concurrency: 4, 'system-tokens': 2000, 'question-words': 12, 'max-tokens': 24, seed: 1,
  };
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, '');
    if (!(name in options) || i + 1 >= argv.length) throw new Error(`bad option ${argv[i]}`);
    options[name] = typeof options[name] === 'number' ? Number(argv[i + 1]) : argv[i + 1];
    if (Number.isNaN(options[name])) throw new Error(`--${name} needs a number`);
  }
  return options;
}

const options = ParseArgs(process.argv.slice(2));
const sdk = new OpenAI({ apiKey: 'none', baseURL: options['base-url'], maxRetries: 0, timeout: 600000 });

let probe_prompt_tokens = 0;  // computed by the sizing requests (their cached tokens not)

async function PromptTokens(messages) {
  const answer = await sdk.chat.completions.create({ model: options.model, messages, max_tokens: 1 });
  probe_prompt_tokens += answer.usage.prompt_tokens -
    (answer.usage.prompt_tokens_details?.cached_tokens ?? 0);
  return answer.usage.prompt_tokens;
}

// A system prompt of about --system-tokens tokens, sized on an unrelated text of the same kind
// (so the sizing warms no cache).
async function SystemPrompt() {
  const probe_chars = 2000;
  const probe = Words(Prng(SubSeed(options.seed, 'probe')), probe_chars);
  const base = await PromptTokens([{ role: 'user', content: 'x' }]);
  const per_char = ((await PromptTokens([{ role: 'user', content: probe }])) - base) / probe.length;
  return Words(Prng(SubSeed(options.seed, 'system')), Math.round(options['system-tokens'] / per_char));
}

// One streaming request: its answer text, TTFT and usage.
async function Ask(messages) {
  const start = performance.now();
  const stream = await sdk.chat.completions.create({
    model: options.model, messages, max_tokens: options['max-tokens'], temperature: 0,
    ignore_eos: true, stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let first = null;
  let usage = null;
  for await (const chunk of stream) {
    const delta = chunk.choices?.[0]?.delta?.content ?? '';
    if (first === null && delta !== '') first = performance.now();
    text += delta;
    if (chunk.usage) usage = chunk.usage;
  }
  return {
    text, ttft_ms: (first ?? performance.now()) - start,
    prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens,
    cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
  };
}

async function Conversation(index, system, results) {
  const random = Prng(SubSeed(options.seed, 'conversation', index));
  const messages = [{ role: 'system', content: system }];
  for (let turn = 0; turn < options.turns; ++turn) {
    messages.push({ role: 'user', content: Words(random, options['question-words'] * 5) });
    const result = await Ask(messages);
    results.push({ conversation: index, turn, ...result, text: undefined });
    messages.push({ role: 'assistant', content: result.text });
  }
}

const system = await SystemPrompt();
const results = [];
const start = performance.now();
await Conversation(0, system, results);  // alone: its first request computes the system prompt
let next = 1;
async function Worker() {
  while (next < options.conversations) await Conversation(next++, system, results);
}
await Promise.all(Array.from({ length: options.concurrency }, Worker));
const elapsed_s = (performance.now() - start) / 1000;

const sum = (key) => results.reduce((total, r) => total + r[key], 0);
const ttfts = results.map((r) => r.ttft_ms).sort((a, b) => a - b);
const later_first_turns = results.filter((r) => r.turn === 0 && r.conversation > 0)
  .map((r) => r.ttft_ms).sort((a, b) => a - b);
const first = results.find((r) => r.conversation === 0 && r.turn === 0);
console.log(JSON.stringify({
  options,
  summary: {
    requests: results.length,
    prompt_tokens: sum('prompt_tokens'),
    cached_tokens: sum('cached_tokens'),
    computed_prompt_tokens: sum('prompt_tokens') - sum('cached_tokens'),
    completion_tokens: sum('completion_tokens'),
    probe_prompt_tokens,
    ttft_p50_ms: Percentile(ttfts, 50),
    ttft_p99_ms: Percentile(ttfts, 99),
    first_request_ttft_ms: first.ttft_ms,
    later_first_turns_ttft_p50_ms: Percentile(later_first_turns, 50),
    elapsed_s,
    requests_per_s: results.length / elapsed_s,
    completion_tokens_per_s: sum('completion_tokens') / elapsed_s,
  },
  results,
}, null, 1));
