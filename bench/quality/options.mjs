// Command-line options of quality.mjs: their table (names, defaults, help) and the parser.

// KeepKV's merge rules (docs/api.md, KeepKV); method `keepkv-RULE` runs each question inline
// with the request's own KV kept under a budget of the ratio.
export const kKeepKvRules = ['gqa_fit', 'group_mean', 'weighted_mean', 'convex', 'evict'];
const kKeepKvPrefix = 'keepkv-';
// The default run: every method of stored-document compression.
export const kDefaultMethods = ['inline', 'none', 'kvzip', 'snapkv', 'h2o', 'streaming'];
// kvzip_heads needs a server started with documents.head_profile, so it runs when named.
// METHOD+merge uploads with compression.merge: the dropped entries fold into the kept ones.
const kMergeSuffix = '+merge';
export const kMethods = [
  ...kDefaultMethods, 'kvzip_heads', `kvzip${kMergeSuffix}`, `kvzip_heads${kMergeSuffix}`,
  ...kKeepKvRules.map((r) => `${kKeepKvPrefix}${r}`)];
// The upload's compression.method and compression.merge of a stored method.
export const CompressionOf = (method) => method.endsWith(kMergeSuffix)
  ? { method: method.slice(0, -kMergeSuffix.length), merge: true }
  : { method };
// The merge rule of a keepkv-RULE method; null for any other method.
export const KeepKvRule = (method) =>
  method.startsWith(kKeepKvPrefix) ? method.slice(kKeepKvPrefix.length) : null;
// Methods that store nothing: each question carries the document in its message.
export const IsInlineMethod = (method) => method === 'inline' || KeepKvRule(method) !== null;
// Methods that run once, at ratio 1.0, whatever --ratios says.
export const kFullCacheMethods = new Set(['inline', 'none']);

const kOptions = [
  ['base-url', 'string', 'http://127.0.0.1:8000/v1', 'API base URL, up to and including /v1'],
  ['api-key', 'string', '', 'API key, sent as "Authorization: Bearer KEY" (empty: no header)'],
  ['model', 'string', '', 'model id of the chat requests (empty: the first of GET /v1/models)'],
  ['documents', 'number', 40, 'documents per method and ratio'],
  ['questions', 'number', 3, 'questions per document, on distinct keys of it'],
  ['min-bytes', 'number', 300, 'smallest document, bytes'],
  ['max-bytes', 'number', 1000, 'largest document, bytes'],
  ['methods', 'string', kDefaultMethods.join(','),
   `comma list of compression methods (${kMethods.join(', ')}); inline sends the document in ` +
   'the message, none uploads it uncompressed, kvzip_heads needs a server with ' +
   'documents.head_profile, METHOD+merge folds the dropped entries into the kept ones, ' +
   'keepkv-RULE sends it in the message with a ' +
   'KeepKV budget of the ratio; keepkv stands for all five keepkv-RULE'],
  ['ratios', 'string', '0.1,0.2,0.3,0.5,0.7,1.0',
   'comma list of fractions of KV entries kept (for keepkv: of the prompt\'s tokens), each in ' +
   '(0, 1]; inline and none run at 1.0 only'],
  ['kv-dtypes', 'string', 'f32',
   'comma list of the precisions uploaded documents are stored in (f32, bf16, int8; ' +
   'compression.kv_dtype); every stored method runs at each'],
  ['completions', 'boolean', false,
   'ask with /v1/completions, the prompt continuing the document (and, for inline, the ' +
   'document first): for a model without a chat template, whose documents are BOS + text'],
  ['concurrency', 'number', 8, 'requests in flight at once (uploads until ready, then questions)'],
  ['seed', 'number', 20261129, 'seed of the documents and questions'],
  ['timeout', 'number', 120,
   'seconds per request, and for an uploaded document to become ready'],
  ['json', 'string', '', 'also write every result to this file as JSON'],
  ['help', 'boolean', false, 'print this help'],
];

export function HelpText() {
  const lines = [
    'Usage: node quality.mjs [OPTIONS]',
    '',
    'Document QA accuracy of kvd\'s KV compression methods: uploads seeded synthetic key-value',
    'documents through /v1/documents with each method and ratio (or, for keepkv-RULE, sends them',
    'in each question with a KeepKV budget), asks for the values of some keys with',
    '/v1/chat/completions, and prints exact-match accuracy as a markdown table.',
    '',
    'Options:',
  ];
  for (const [name, type, fallback, help] of kOptions) {
    const flag = type === 'boolean' ? `--${name}` : `--${name} ${type === 'number' ? 'N' : 'S'}`;
    const shown =
      fallback === '' || fallback === false ? '' : ` (default ${JSON.stringify(fallback)})`;
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

// Parses `--name value`, `--name=value`, and for booleans `--name`. Throws an Error with a
// readable message on anything else.
export function ParseOptions(argv) {
  const table = new Map(kOptions.map((o) => [o[0], o]));
  const options = Object.fromEntries(kOptions.map(([name, , fallback]) => [Camel(name), fallback]));
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    if (!arg.startsWith('--')) throw new Error(`unexpected argument "${arg}"`);
    let [name, value] = arg.slice(2).split(/=(.*)/s, 2);
    const spec = table.get(name);
    if (!spec) throw new Error(`unknown option --${name} (see --help)`);
    const type = spec[1];
    if (type === 'boolean') {
      if (value !== undefined) throw new Error(`--${name} takes no value`);
      options[Camel(name)] = true;
      continue;
    }
    if (value === undefined) {
      if (i + 1 >= argv.length) throw new Error(`--${name} needs a value`);
      value = argv[++i];
    }
    if (type === 'number') {
      const parsed = Number(value);
      if (value.trim() === '' || !Number.isFinite(parsed) || parsed < 0) {
        throw new Error(`--${name}: not a non-negative number: "${value}"`);
      }
      value = parsed;
    }
    options[Camel(name)] = value;
  }
  return options;
}

const List = (text) => text.split(',').map((entry) => entry.trim()).filter((e) => e !== '');

export const kKvDtypes = ['f32', 'bf16', 'int8'];

// Checks the options and returns the plan: [{method, ratio, kvDtype}] in run order (kvDtype
// null for the methods that store nothing). Throws an Error naming the problem.
export function Plan(options) {
  for (const name of ['documents', 'questions', 'concurrency', 'min-bytes', 'max-bytes']) {
    const value = options[Camel(name)];
    if (!Number.isInteger(value) || value < 1) throw new Error(`--${name}: a positive integer`);
  }
  if (!Number.isSafeInteger(options.seed)) throw new Error('--seed: an integer below 2^53');
  if (options.minBytes > options.maxBytes) throw new Error('--min-bytes: above --max-bytes');
  if (!(options.timeout > 0)) throw new Error('--timeout: positive');
  // `keepkv` stands for every keepkv-RULE method.
  const methods = List(options.methods).flatMap((method) =>
    (method === 'keepkv' ? kMethods.filter((m) => KeepKvRule(m) !== null) : [method]));
  if (methods.length === 0) throw new Error('--methods: no methods');
  for (const method of methods) {
    if (!kMethods.includes(method)) throw new Error(`--methods: unknown method "${method}"`);
  }
  const ratios = List(options.ratios).map((entry) => {
    const ratio = Number(entry);
    if (!(ratio > 0 && ratio <= 1)) throw new Error(`--ratios: not in (0, 1]: "${entry}"`);
    return ratio;
  });
  if (ratios.length === 0) throw new Error('--ratios: no ratios');
  const kvDtypes = [...new Set(List(options.kvDtypes))];
  if (kvDtypes.length === 0) throw new Error('--kv-dtypes: no precisions');
  for (const kvDtype of kvDtypes) {
    if (!kKvDtypes.includes(kvDtype)) throw new Error(`--kv-dtypes: unknown "${kvDtype}"`);
  }
  const RatiosOf = (method) => (kFullCacheMethods.has(method) ? [1] : [...new Set(ratios)]);
  const DtypesOf = (method) => (IsInlineMethod(method) ? [null] : kvDtypes);
  return [...new Set(methods)].flatMap((method) => DtypesOf(method).flatMap((kvDtype) =>
    RatiosOf(method).map((ratio) => ({ method, ratio, kvDtype }))));
}
