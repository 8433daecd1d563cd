// Conversations for the chat-template comparison: hand-written edge cases plus seeded random
// ones, shaped by what each template supports (tools, reasoning, strict alternation).

// mulberry32: a small seeded generator, so every run renders the same corpus.
function makeRandom(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  return { next, int, pick: (items) => items[int(items.length)], chance: (p) => next() < p };
}

// Text that stresses rendering: whitespace the templates trim, non-ASCII, quotes and
// backslashes, and text that looks like Jinja or like the templates' own markers.
const kFragments = [
  'Hello',
  'What is the capital of France?',
  'Paris.',
  '',
  '  padded with spaces  ',
  '\nleading and trailing newlines\n\n',
  'line one\nline two\n\tindented',
  'Grüße, 世界 😀 — שלום',
  'naïve café ñ ß Ω ∑ 🤖🧠',
  "quotes ' \" and backslash \\ and \\n literal",
  '{{ messages }} {% if true %}x{% endif %} {# note #}',
  '{%- raw %}{{ not a tag }}{% endraw -%}',
  '<|im_start|>user\nfake<|im_end|>',
  '<|start_header_id|>system<|end_header_id|>',
  '[INST] nested [/INST]',
  '<tool_response>\nnot really\n</tool_response>',
  '<think>\nhidden thought\n</think>\n\nvisible answer',
  'a</think>b',
  '%s %d {} {0}',
  'x'.repeat(200),
];

const kCities = ['Paris', 'Tōkyō', 'São Paulo', 'Zürich', "N'Djamena"];

export const kTools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Get the current weather — in °C',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', description: 'The city' },
          unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        },
        required: ['city'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'search',
      description: 'Search the web for "{{ query }}"',
      parameters: {
        type: 'object',
        properties: { zeta: { type: 'integer' }, alpha: { type: 'number' } },
        required: [],
      },
      return: { type: 'string' },
    },
  },
];

const kAlphanumeric = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

function toolCallId(random) {
  let id = '';
  for (let i = 0; i < 9; ++i) id += kAlphanumeric[random.int(kAlphanumeric.length)];
  return id;
}

function text(random) {
  const parts = [];
  const count = 1 + random.int(3);
  for (let i = 0; i < count; ++i) parts.push(random.pick(kFragments));
  return parts.join(random.pick([' ', '\n', '']));
}

function toolCall(random, id, argumentsAsString) {
  const args = random.chance(0.5)
    ? { city: random.pick(kCities), unit: 'celsius' }
    : { zeta: random.int(100), alpha: 0.5 + random.int(10), nested: { list: [1, 'two', null] } };
  return {
    id,
    type: 'function',
    function: {
      name: random.pick(['get_weather', 'search']),
      arguments: argumentsAsString ? JSON.stringify(args) : args,
    },
  };
}

// One random conversation for a template with the given features:
//   tools: tool definitions, assistant tool_calls and tool results;
//   singleToolCall: at most one call per assistant turn (Llama 3.2);
//   thinking: reasoning_content and enable_thinking (Qwen3);
//   alternate: user/assistant strictly alternate after an optional system message (Mistral);
//   anyRole: roles the template prints verbatim (Llama 3).
function randomConversation(random, features) {
  const messages = [];
  const request = { messages };
  if (random.chance(0.6)) messages.push({ role: 'system', content: text(random) });
  else if (features.anyRole && random.chance(0.3)) {
    messages.push({ role: 'developer', content: text(random) });
  }
  const useTools = features.tools && random.chance(0.5);
  if (useTools) request.tools = random.chance(0.5) ? kTools : [kTools[0]];
  const turns = 1 + random.int(4);
  for (let turn = 0; turn < turns; ++turn) {
    messages.push({ role: 'user', content: text(random) });
    const last = turn === turns - 1;
    if (last && random.chance(0.6)) break;
    if (useTools && random.chance(0.5)) {
      const calls = features.singleToolCall ? 1 : 1 + random.int(2);
      const ids = [];
      const tool_calls = [];
      for (let i = 0; i < calls; ++i) {
        ids.push(toolCallId(random));
        tool_calls.push(toolCall(random, ids[i], features.thinking && random.chance(0.3)));
      }
      const call = { role: 'assistant', content: random.chance(0.5) ? '' : text(random) };
      call.tool_calls = tool_calls;
      messages.push(call);
      for (const id of ids) {
        messages.push({
          role: 'tool',
          tool_call_id: id,
          content: JSON.stringify({ temperature: random.int(40), sky: random.pick(kFragments) }),
        });
      }
      if (features.alternate) messages.push({ role: 'assistant', content: text(random) });
      else if (random.chance(0.7)) messages.push({ role: 'assistant', content: text(random) });
    } else {
      const reply = { role: 'assistant', content: text(random) };
      if (features.thinking && random.chance(0.4)) reply.reasoning_content = text(random);
      messages.push(reply);
    }
  }
  if (features.anyRole && random.chance(0.2)) {
    messages.push({ role: random.pick(['tool', 'ipython', 'critic']), content: text(random) });
  }
  if (features.thinking && random.chance(0.5)) request.enable_thinking = random.chance(0.5);
  // A fixed date keeps Llama 3.2's strftime_now out of most renderings.
  if (features.llamaTools && random.chance(0.8)) request.date_string = '26 Jul 2024';
  request.add_generation_prompt = random.chance(0.7);
  return request;
}

const user = (content) => ({ role: 'user', content });
const assistant = (content) => ({ role: 'assistant', content });
const system = (content) => ({ role: 'system', content });

const kWeatherCall = {
  id: 'call00001',
  type: 'function',
  function: { name: 'get_weather', arguments: { city: 'Paris', unit: 'celsius' } },
};

// Edge cases every template renders (or refuses) the same way on both sides.
function handWritten(features) {
  const cases = [
    { name: 'single user', messages: [user('Hi')] },
    { name: 'system and user', messages: [system('Be brief.'), user('Hi')] },
    { name: 'no generation prompt', add_generation_prompt: false,
      messages: [system('S'), user('Q'), assistant('A')] },
    { name: 'multi-turn', messages: [system('S'), user('1'), assistant('2'), user('3'),
      assistant('4'), user('5')] },
    { name: 'empty contents', messages: [system(''), user(''), assistant(''), user('')] },
    { name: 'unicode', messages: [user('Grüße 世界 😀 שלום'), assistant('é'), user('🧠')] },
    { name: 'jinja-looking text', messages: [system('{{ bos_token }}{% raw %}'),
      user('{% for m in messages %}{{ m }}{% endfor %}')] },
    { name: 'padded content', messages: [system('  s  \n'), user('\n\n  q  \n')] },
    { name: 'empty conversation', messages: [] },
    { name: 'system only', messages: [system('Only a system message.')] },
    { name: 'assistant first', messages: [assistant('I speak first.'), user('Ok')] },
    { name: 'two users in a row', messages: [user('one'), user('two')] },
    { name: 'developer role', messages: [{ role: 'developer', content: 'Dev says.' }, user('Q')] },
    { name: 'extra message keys', messages: [{ content: 'keys reversed', role: 'user',
      name: 'alice' }] },
  ];
  if (features.tools) {
    cases.push(
      { name: 'tools, no call', tools: kTools, messages: [system('S'), user('Weather?')] },
      { name: 'tools without system', tools: kTools, messages: [user('Weather?')] },
      { name: 'tool call and result', tools: [kTools[0]], messages: [user('Weather in Paris?'),
        { role: 'assistant', content: '', tool_calls: [kWeatherCall] },
        { role: 'tool', tool_call_id: 'call00001', content: '{"temperature": 21}' },
        assistant('It is 21 °C.'), user('Thanks')] },
      { name: 'tool call id of wrong length', tools: [kTools[0]], messages: [user('Weather?'),
        { role: 'assistant', content: '', tool_calls: [{ ...kWeatherCall, id: 'short' }] },
        { role: 'tool', tool_call_id: 'short', content: 'sunny' }] },
      { name: 'empty tools list', tools: [], messages: [user('Hi')] },
    );
    if (!features.singleToolCall) {
      cases.push({ name: 'parallel tool calls', tools: kTools, add_generation_prompt: false,
        messages: [user('Both?'),
          { role: 'assistant', content: 'Calling.', tool_calls: [kWeatherCall,
            { id: 'call00002', type: 'function',
              function: { name: 'search', arguments: '{"zeta": 1}' } }] },
          { role: 'tool', tool_call_id: 'call00001', content: 'sunny' },
          { role: 'tool', tool_call_id: 'call00002', content: 'found' },
          assistant('Done.')] });
    }
  }
  if (features.thinking) {
    cases.push(
      { name: 'thinking disabled', enable_thinking: false, messages: [user('Q')] },
      { name: 'thinking enabled', enable_thinking: true, messages: [user('Q')] },
      { name: 'reasoning_content after last query', add_generation_prompt: false,
        messages: [user('Q'), { role: 'assistant', content: 'A', reasoning_content: '\nwhy\n' }] },
      { name: 'think tags in history', messages: [user('Q1'),
        assistant('<think>\nold thought\n</think>\n\nold answer'), user('Q2')] },
      { name: 'multi-step tool with reasoning', tools: [kTools[0]], messages: [user('Q'),
        { role: 'assistant', content: '', reasoning_content: 'need weather',
          tool_calls: [kWeatherCall] },
        { role: 'tool', tool_call_id: 'call00001', content: '21' }] },
    );
  }
  if (features.llamaTools) {
    cases.push(
      { name: 'tools in system message', tools: kTools, tools_in_user_message: false,
        date_string: '01 Jan 2025', messages: [system('S'), user('Q')] },
      { name: 'tool result as mapping', tools: [kTools[0]], date_string: '01 Jan 2025',
        messages: [user('Q'), { role: 'assistant', tool_calls: [kWeatherCall] },
          { role: 'ipython', content: { temperature: 21, sky: 'clear' } }] },
      { name: 'custom_tools', custom_tools: [kTools[1]], date_string: '01 Jan 2025',
        messages: [user('Q')] },
      { name: 'two tool calls refused', tools: kTools, date_string: '01 Jan 2025',
        messages: [user('Q'), { role: 'assistant', tool_calls: [kWeatherCall, kWeatherCall] }] },
    );
  }
  return cases;
}

// The corpus for one template: hand-written cases first, then `count` seeded random ones.
export function corpus(features, seed, count) {
  const random = makeRandom(seed);
  const cases = handWritten(features);
  for (let i = 0; i < count; ++i) {
    cases.push({ name: `random #${i}`, ...randomConversation(random, features) });
  }
  return cases;
}
