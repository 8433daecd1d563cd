// Synthetic key-value documents, ported from tools/make_test_model/data.py (the data kvd-tiny was
// trained on): lines of records `KEY: VALUE` mixed with lower-case filler sentences.

import { Integer, Prng } from './prng.mjs';

// data.py's KEY_WORDS, frozen: _key_words() draws them with numpy's PCG64 (seed 7), which this
// file does not port. Each is one token of kvd-tiny's tokenizer.
export const kKeyWords = [
  'bab', 'bag', 'bam', 'bap', 'beb', 'beg', 'bem', 'bik', 'bim', 'bin', 'bip', 'bok', 'bon',
  'boz', 'bud', 'buk', 'bum', 'dab', 'dan', 'dap', 'dat', 'deg', 'dem', 'dep', 'did', 'dig',
  'din', 'dip', 'dit', 'dod', 'dox', 'doz', 'duk', 'fad', 'fam', 'fat', 'feb', 'fed', 'fem',
  'fen', 'fig', 'fip', 'fiz', 'fod', 'gag', 'geb', 'ged', 'gep', 'get', 'gib', 'git', 'gon',
  'goz', 'gub', 'guk', 'gum', 'gup', 'gut', 'kam', 'kek', 'kem', 'kib', 'kiz', 'kob', 'kog',
  'kom', 'kup', 'kuz', 'lam', 'lan', 'lap', 'lat', 'laz', 'lep', 'lex', 'lid', 'lin', 'lip',
  'lit', 'lix', 'lob', 'log', 'lok', 'lon', 'loz', 'lud', 'lum', 'mab', 'mid', 'miz', 'mob',
  'mog', 'mom', 'mop', 'mot', 'moz', 'mub', 'mud', 'mum', 'mut', 'muz', 'nab', 'nag', 'nam',
  'nat', 'nax', 'neb', 'nen', 'nep', 'nex', 'nez', 'nik', 'niz', 'nod', 'non', 'not', 'nup',
  'nux', 'pap', 'pat', 'pen', 'pep', 'pez', 'pig', 'pog', 'pon', 'pox', 'pug', 'puk', 'puz',
  'rak', 'rax', 'rem', 'ren', 'rep', 'rig', 'rim', 'rin', 'rog', 'rok', 'rom', 'ron', 'rug',
  'ruz', 'sag', 'sak', 'sat', 'seb', 'sed', 'seg', 'sib', 'sig', 'sim', 'sin', 'sit', 'siz',
  'sun', 'sux', 'tad', 'tag', 'tan', 'tap', 'taz', 'tez', 'tib', 'tot', 'tox', 'tub', 'tuk',
  'vad', 'vak', 'vat', 'vez', 'vig', 'vik', 'vit', 'vix', 'vok', 'vom', 'vox', 'vub', 'vuk',
  'vum', 'vux', 'zad', 'zan', 'zem', 'zen', 'zez', 'zid', 'zik', 'zim', 'zix', 'zob', 'zod',
  'zok', 'zom', 'zub', 'zum', 'zup',
];
const kValueAlphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const kValueLengths = [3, 6];  // inclusive
const kRecordLineProbability = 0.4;
const kMinRecords = 2;

// data.py's _WORDS: the filler grammar's word classes.
export const kFillerWords = {
  det: 'the a this that every one some each our their'.split(' '),
  adj: ('old small quiet green bright heavy narrow wooden silver cold warm late early ' +
        'distant hidden simple broken gentle tall round dark soft busy empty').split(' '),
  noun: ('river garden window stone bridge market letter lamp forest road village ' +
         'tower boat field song engine clock winter harbor mountain paper kitchen ' +
         'teacher farmer painter station island basket candle mirror wagon').split(' '),
  verb: ('watches follows carries finds opens crosses paints reaches holds passes ' +
         'moves builds keeps leaves covers joins fills turns').split(' '),
  iverb: 'rests waits sleeps shines falls grows returns stays fades sings'.split(' '),
  prep: 'near under behind beside across over through along past inside'.split(' '),
  adv: 'slowly quietly often rarely again today soon always never still'.split(' '),
  conj: 'and but while because so'.split(' '),
};

const Choice = (random, items) => items[Integer(random, items.length)];

// One lower-case sentence from the grammar, ending with a period. Draws happen in data.py's
// order (arguments left to right).
export function FillerSentence(random) {
  const w = (kind) => Choice(random, kFillerWords[kind]);
  const noun_phrase = () =>
    (random() < 0.5 ? `${w('det')} ${w('adj')} ${w('noun')}` : `${w('det')} ${w('noun')}`);
  const clause = () => {
    switch (Integer(random, 4)) {
      case 0: return `${noun_phrase()} ${w('verb')} ${noun_phrase()}`;
      case 1: return `${noun_phrase()} ${w('iverb')} ${w('prep')} ${noun_phrase()}`;
      case 2: return `${noun_phrase()} ${w('iverb')} ${w('adv')}`;
      default: return `${noun_phrase()} ${w('adv')} ${w('verb')} ${noun_phrase()}`;
    }
  };
  let text = clause();
  if (random() < 0.3) text += ` ${w('conj')} ${clause()}`;
  return `${text}.`;
}

function RandomValue(random) {
  const length = kValueLengths[0] + Integer(random, kValueLengths[1] - kValueLengths[0] + 1);
  let value = '';
  for (let i = 0; i < length; ++i) value += Choice(random, kValueAlphabet);
  return value;
}

// data.py's make_document: a document of about `target_bytes` bytes (never above it unless its
// two records force it), as {text, records: [{key, value}] in document order}.
export function MakeDocument(random, target_bytes) {
  const lines = [];
  const records = [];
  const keys = new Set();
  let size = 0;
  let misses = 0;
  for (;;) {
    const need_record = records.length < kMinRecords;
    let line;
    let record = null;
    if (need_record || random() < kRecordLineProbability) {
      let key = Choice(random, kKeyWords);
      while (keys.has(key)) key = Choice(random, kKeyWords);
      record = { key, value: RandomValue(random) };
      line = `${record.key}: ${record.value}`;
    } else {
      line = FillerSentence(random);
    }
    const added = line.length + (lines.length > 0 ? 1 : 0);
    if (size + added > target_bytes && !need_record) {
      // A filler line that does not fit gets a few more draws before the document ends.
      misses += 1;
      if (misses < 4 && record === null) continue;
      break;
    }
    lines.push(line);
    size += added;
    if (record !== null) {
      records.push(record);
      keys.add(record.key);
    }
  }
  return { text: lines.join('\n'), records };
}

// Document `index` of the benchmark, drawn as data.py's make_eval_set draws a held-out one: a
// byte target uniform in [min_bytes, max_bytes], redrawn while the text is shorter than
// min_bytes; then `questions` records on distinct keys (the head of a random permutation, so
// fewer when the document has fewer records). Returns {index, text, records, questions}; throws
// when a thousand draws miss the range (a narrow range of a few dozen bytes can be unreachable).
export function BenchDocument(seed, index, min_bytes, max_bytes, questions) {
  const random = Prng(seed, index);
  const draw = () => MakeDocument(random, min_bytes + Integer(random, max_bytes - min_bytes + 1));
  let doc = draw();
  for (let draws = 1; doc.text.length < min_bytes; ++draws) {
    if (draws === 1000) throw new Error(`no document of ${min_bytes}-${max_bytes} bytes drawn`);
    doc = draw();
  }
  const order = doc.records.map((_, i) => i);
  for (let i = order.length - 1; i > 0; --i) {
    const j = Integer(random, i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  return { index, ...doc, questions: order.slice(0, questions).map((i) => doc.records[i]) };
}
