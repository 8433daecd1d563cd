// Unit checks of the document generator, no server needed:
//   node --test bench/quality/documents.test.mjs
import assert from 'node:assert/strict';
import test from 'node:test';

import {
  BenchDocument, FillerSentence, kFillerWords, kKeyWords, MakeDocument,
} from './documents.mjs';
import { Prng } from './prng.mjs';

const kSeed = 20261129;
const Docs = (seed, count) =>
  Array.from({ length: count }, (_, i) => BenchDocument(seed, i, 300, 1000, 3));

// The filler grammar of data.py as one regular expression.
const kFiller = (() => {
  const w = (kind) => `(?:${kFillerWords[kind].join('|')})`;
  const np = `${w('det')} (?:${w('adj')} )?${w('noun')}`;
  const clause = `(?:${np} ${w('verb')} ${np}|${np} ${w('iverb')} ${w('prep')} ${np}|` +
                 `${np} ${w('iverb')} ${w('adv')}|${np} ${w('adv')} ${w('verb')} ${np})`;
  return new RegExp(`^${clause}(?: ${w('conj')} ${clause})?\\.$`);
})();
const kRecord = new RegExp(`^(${kKeyWords.join('|')}): ([A-Z]{3,6})$`);

test('the same seed gives the same documents, another seed others', () => {
  assert.deepEqual(Docs(kSeed, 20), Docs(kSeed, 20));
  assert.notDeepEqual(Docs(kSeed, 20).map((d) => d.text), Docs(kSeed + 1, 20).map((d) => d.text));
  // Document i does not depend on how many are drawn.
  assert.deepEqual(Docs(kSeed, 5), Docs(kSeed, 40).slice(0, 5));
});

test('200 distinct key words of three letters', () => {
  assert.equal(new Set(kKeyWords).size, 200);
  for (const key of kKeyWords) assert.match(key, /^[bdfgklmnprstvz][aeiou][bdgkmnptxz]$/);
});

test('documents stay within their byte range', () => {
  for (const doc of Docs(kSeed, 300)) {
    const bytes = Buffer.byteLength(doc.text);
    assert.ok(bytes >= 300 && bytes <= 1000, `${bytes} bytes`);
  }
  const random = Prng(kSeed, 1 << 30);
  for (let target = 24; target < 1500; target += 7) {
    assert.ok(MakeDocument(random, target).text.length <= target, `target ${target}`);
  }
});

test('every line is a record or a filler sentence; records match the lines', () => {
  for (const doc of Docs(kSeed, 300)) {
    const from_lines = [];
    for (const line of doc.text.split('\n')) {
      const record = kRecord.exec(line);
      if (record) from_lines.push({ key: record[1], value: record[2] });
      else assert.match(line, kFiller);
    }
    assert.deepEqual(doc.records, from_lines);
    assert.ok(doc.records.length >= 2);
  }
});

test('keys are unique within a document; questions ask distinct keys of it', () => {
  for (const doc of Docs(kSeed, 300)) {
    const keys = doc.records.map((r) => r.key);
    assert.equal(new Set(keys).size, keys.length);
    assert.equal(doc.questions.length, Math.min(3, doc.records.length));
    assert.equal(new Set(doc.questions.map((q) => q.key)).size, doc.questions.length);
    for (const q of doc.questions) assert.ok(doc.records.includes(q));
  }
});

// Records are 40% of the draws, but the first two lines are forced records and short records
// still fit where a sentence no longer does: data.py's documents of 300-1000 bytes are 49% records.
test('about half the lines are records; sentences use the whole grammar', () => {
  let records = 0;
  let lines = 0;
  for (const doc of Docs(kSeed, 500)) {
    records += doc.records.length;
    lines += doc.text.split('\n').length;
  }
  assert.ok(records / lines > 0.45 && records / lines < 0.53, `${records} / ${lines}`);
  const random = Prng(kSeed, 7);
  const words = new Set();
  for (let i = 0; i < 5000; ++i) {
    for (const word of FillerSentence(random).slice(0, -1).split(' ')) words.add(word);
  }
  assert.equal(words.size, new Set(Object.values(kFillerWords).flat()).size);
});
