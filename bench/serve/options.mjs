// Command-line options of load.mjs: their table (names, defaults, help) and the parser.

const kOptions = [
  ['protocol', 'string', 'http',
   'http: the OpenAI API through the OpenAI SDK (SSE); grpc: kvd.v1.InferenceService/Generate ' +
   'through @grpc/grpc-js, one HTTP/2 connection per tenant'],
  ['base-url', 'string', 'http://127.0.0.1:8000/v1',
   'API base URL, up to and including /v1 (--protocol http)'],
  ['grpc-target', 'string', '127.0.0.1:50051', 'kvd\'s gRPC address, HOST:PORT (--protocol grpc)'],
  ['model', 'string', 'kvd-tiny', 'model id sent with every request'],
  ['api-key', 'string', 'none', 'API key (tenant a in --flood)'],
  ['api-key-b', 'string', '', 'API key of tenant b, needed by --flood'],
  ['rates', 'string', '5,10,20,inf',
   'comma list of request rates in requests/s; Poisson arrivals; "inf" sends all at once. ' +
   'In --flood, the rates of tenant a'],
  ['rate-b', 'number', 2, 'request rate of tenant b in --flood, requests/s'],
  ['duration', 'number', 0,
   'seconds of arrivals per rate (0: none); with --requests, whichever ends first'],
  ['requests', 'number', 30, 'requests per rate (0: no limit; then --duration is needed)'],
  ['prompt-tokens', 'number', 128,
   'approximate prompt length in tokens (random lowercase words, sized with two probe ' +
   'requests; the real counts come from usage)'],
  ['max-tokens', 'number', 32, 'max_tokens of every request'],
  ['temperature', 'number', '',
   'temperature of every request, 0 for greedy (default: unset, the server\'s default)'],
  ['chat', 'boolean', false,
   'use /v1/chat/completions instead of /v1/completions (gRPC: messages instead of prompt)'],
  ['ignore-eos', 'boolean', true,
   'send ignore_eos so every output has max_tokens tokens (--ignore-eos=false: do not)'],
  ['seed', 'number', 1, 'seed of prompts and arrival times'],
  ['timeout', 'number', 60, 'per-request timeout in seconds; a timed-out request is an error'],
  ['drain', 'number', 60,
   'seconds to wait, after a rate\'s last arrival, for requests still in flight; the rest ' +
   'are aborted and counted as errors ("drain")'],
  ['deadline', 'number', 900,
   'global deadline in seconds for the whole run; in-flight requests are then aborted ' +
   '("deadline") and the run exits 1'],
  ['flood', 'boolean', false,
   'two tenants at once: a (--api-key) at each of --rates, b (--api-key-b) at --rate-b, ' +
   'over the same window (--duration, or the span of a\'s arrivals)'],
  ['json', 'boolean', false, 'print one JSON document instead of markdown tables'],
  ['help', 'boolean', false, 'print this help'],
];

export function HelpText() {
  const lines = [
    'Usage: node load.mjs [OPTIONS]',
    '',
    'Load generator for an OpenAI-compatible HTTP API (kvd serve), or kvd\'s gRPC API. Every',
    'request streams with usage; per rate it prints request and token throughput,',
    'TTFT / TPOT / ITL / end-to-end latency percentiles (nearest rank) and the client\'s CPU time',
    'per output token.',
    '',
    'Options:',
  ];
  for (const [name, type, fallback, help] of kOptions) {
    const flag = type === 'boolean' ? `--${name}` : `--${name} ${type === 'number' ? 'N' : 'S'}`;
    const shown = fallback === '' ? '' : ` (default ${JSON.stringify(fallback)})`;
    // Word-wrapped to 100 columns, continuation lines under the text.
    let line = `  ${flag.padEnd(20)}`;
    for (const word of `${help}${shown}`.split(' ')) {
      if (line.length + 1 + word.length > 100 && line.trim() !== flag) {
        lines.push(line);
        line = ' '.repeat(22);
      }
      line += ` ${word}`;
    }
    lines.push(line);
  }
  return lines.join('\n');
}

const Camel = (name) => name.replace(/-([a-z])/g, (_, ch) => ch.toUpperCase());

// Parses `--name value`, `--name=value`, and for booleans `--name`, `--name=false`,
// `--no-name`. Throws an Error with a readable message on anything else.
export function ParseOptions(argv) {
  const table = new Map(kOptions.map((o) => [o[0], o]));
  const options = Object.fromEntries(kOptions.map(([name, , fallback]) => [Camel(name), fallback]));
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    if (!arg.startsWith('--')) throw new Error(`unexpected argument "${arg}"`);
    let [name, value] = arg.slice(2).split(/=(.*)/s, 2);
    if (!table.has(name) && name.startsWith('no-') && table.get(name.slice(3))?.[1] === 'boolean') {
      if (value !== undefined) throw new Error(`--${name} takes no value`);
      name = name.slice(3);
      value = 'false';
    }
    const spec = table.get(name);
    if (!spec) throw new Error(`unknown option --${name} (see --help)`);
    const type = spec[1];
    if (value === undefined) {
      if (type === 'boolean') {
        value = 'true';
      } else {
        if (i + 1 >= argv.length) throw new Error(`--${name} needs a value`);
        value = argv[++i];
      }
    }
    let parsed;
    if (type === 'boolean') {
      if (value !== 'true' && value !== 'false') throw new Error(`--${name}: true or false`);
      parsed = value === 'true';
    } else if (type === 'number') {
      parsed = Number(value);
      if (value.trim() === '' || !Number.isFinite(parsed) || parsed < 0) {
        throw new Error(`--${name}: not a non-negative number: "${value}"`);
      }
    } else {
      parsed = value;
    }
    options[Camel(name)] = parsed;
  }
  return options;
}

// The rates of --rates as numbers, Infinity for "inf". Throws on a bad entry.
export function ParseRates(text) {
  const rates = text.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  if (rates.length === 0) throw new Error('--rates: no rates');
  return rates.map((entry) => {
    if (entry === 'inf') return Infinity;
    const rate = Number(entry);
    if (!Number.isFinite(rate) || rate <= 0) throw new Error(`--rates: bad rate "${entry}"`);
    return rate;
  });
}

// Checks combinations no single option can; throws an Error naming the problem.
export function Validate(options) {
  if (!Number.isInteger(options.requests)) throw new Error('--requests: not an integer');
  if (!Number.isInteger(options.maxTokens) || options.maxTokens < 1) {
    throw new Error('--max-tokens: a positive integer');
  }
  if (!(options.promptTokens >= 1)) throw new Error('--prompt-tokens: at least 1');
  if (options.protocol !== 'http' && options.protocol !== 'grpc') {
    throw new Error('--protocol: http or grpc');
  }
  if (!(options.timeout > 0)) throw new Error('--timeout: positive');
  if (!(options.deadline > 0)) throw new Error('--deadline: positive');
  if (options.requests === 0 && options.duration === 0) {
    throw new Error('need --requests or --duration (or both)');
  }
  const rates = ParseRates(options.rates);
  if (rates.includes(Infinity) && options.requests === 0) {
    throw new Error('rate inf needs --requests');
  }
  if (options.flood) {
    if (options.apiKeyB === '') throw new Error('--flood needs --api-key-b');
    if (!(options.rateB > 0)) throw new Error('--rate-b: positive');
    if (rates.includes(Infinity) && options.duration === 0) {
      throw new Error('--flood with rate inf needs --duration (the window tenant b sends in)');
    }
  }
  return rates;
}
