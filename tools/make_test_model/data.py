"""Synthetic key-value documents and the chat-format training samples built on them.

A document is a list of lines: records `KEY: VALUE` (KEY: 3 random digits, VALUE:
3-6 random upper-case letters) mixed with lower-case filler sentences from a
small grammar. A value can only be answered by attending to the document. Keys
and values use disjoint alphabets, so the letters after a key can only be a value.

Every sample starts with the document as a user turn, exactly the prefix a
server prefills once and stores:

  <|begin_of_text|><|start_header_id|>user<|end_header_id|>\\n\\nDOCUMENT

and continues with one of
  QA:             \\n\\nQ: KEY<|eot_id|><|start_header_id|>assistant<|end_header_id|>\\n\\nVALUE<|eot_id|>
                  then optional further turns
                  <|start_header_id|>user<|end_header_id|>\\n\\nQ: KEY2<|eot_id|>...\\n\\nVALUE2<|eot_id|>
  reconstruction: \\n\\nRepeat the previous context exactly.<|eot_id|>
                  <|start_header_id|>assistant<|end_header_id|>\\n\\nDOCUMENT<|eot_id|>
  chunked:        \\n\\nRepeat the part of the previous context exactly, starting with
                  <last 8 document tokens before the chunk><|eot_id|>
                  <|start_header_id|>assistant<|end_header_id|>\\n\\nCHUNK   (+<|eot_id|> at the end)

Samples are built from token pieces; the tokenization equals encoding the whole
text at once because every join falls on a pre-token boundary (checked by
`check_sample`). Only answer / reconstruction tokens carry loss.
"""

import dataclasses
import string

import numpy as np

import bpe

KEY_ALPHABET = string.digits
KEY_LENGTH = 3
VALUE_ALPHABET = string.ascii_uppercase
VALUE_LENGTHS = (3, 6)  # inclusive
RECORD_LINE_PROBABILITY = 0.4

REPEAT_PROMPT = "\n\nRepeat the previous context exactly."
REPEAT_PART_PROMPT = "\n\nRepeat the part of the previous context exactly, starting with "
CHUNK_OVERLAP_TOKENS = 8

_WORDS = {
    "det": "the a this that every one some each our their".split(),
    "adj": ("old small quiet green bright heavy narrow wooden silver cold warm late early "
            "distant hidden simple broken gentle tall round dark soft busy empty").split(),
    "noun": ("river garden window stone bridge market letter lamp forest road village "
             "tower boat field song engine clock winter harbor mountain paper kitchen "
             "teacher farmer painter station island basket candle mirror wagon").split(),
    "verb": ("watches follows carries finds opens crosses paints reaches holds passes "
             "moves builds keeps leaves covers joins fills turns").split(),
    "iverb": ("rests waits sleeps shines falls grows returns stays fades sings").split(),
    "prep": "near under behind beside across over through along past inside".split(),
    "adv": "slowly quietly often rarely again today soon always never still".split(),
    "conj": "and but while because so".split(),
}


def _choice(rng, items):
  return items[int(rng.integers(len(items)))]


def filler_sentence(rng):
  """One lower-case sentence from a small grammar, ending with a period."""
  w = lambda kind: _choice(rng, _WORDS[kind])

  def noun_phrase():
    if rng.random() < 0.5:
      return "%s %s %s" % (w("det"), w("adj"), w("noun"))
    return "%s %s" % (w("det"), w("noun"))

  def clause():
    form = int(rng.integers(4))
    if form == 0:
      return "%s %s %s" % (noun_phrase(), w("verb"), noun_phrase())
    if form == 1:
      return "%s %s %s %s" % (noun_phrase(), w("iverb"), w("prep"), noun_phrase())
    if form == 2:
      return "%s %s %s" % (noun_phrase(), w("iverb"), w("adv"))
    return "%s %s %s %s" % (noun_phrase(), w("adv"), w("verb"), noun_phrase())

  text = clause()
  if rng.random() < 0.3:
    text += " %s %s" % (w("conj"), clause())
  return text + "."


def _key_words(n=200):
  """n lower-case consonant-vowel-consonant words that are no filler word; each becomes
  one BPE token, the same token in a record (`kab: VALUE`) and a question (`Q:kab`)."""
  taken = {w for ws in _WORDS.values() for w in ws}
  words = []
  for c1 in "bdfgklmnprstvz":
    for v in "aeiou":
      for c2 in "bdgkmnptxz":
        w = c1 + v + c2
        if w not in taken:
          words.append(w)
  order = np.random.default_rng(7).permutation(len(words))[:n]
  return sorted(words[i] for i in order)


KEY_WORDS = _key_words()


def random_key(rng):
  return _choice(rng, KEY_WORDS)


def random_value(rng):
  n = int(rng.integers(VALUE_LENGTHS[0], VALUE_LENGTHS[1] + 1))
  return "".join(_choice(rng, VALUE_ALPHABET) for _ in range(n))


@dataclasses.dataclass
class Document:
  text: str
  records: list  # [(key, value)] in document order


def make_document(rng, target_bytes, min_records=2, max_records=1 << 30):
  """A document of about `target_bytes` bytes (never above it unless forced by min_records)."""
  lines, records, keys, size, misses = [], [], set(), 0, 0
  while True:
    need_record = len(records) < min_records
    may_record = len(records) < max_records
    if need_record or (may_record and rng.random() < RECORD_LINE_PROBABILITY):
      key = random_key(rng)
      while key in keys:
        key = random_key(rng)
      value = random_value(rng)
      line = "%s: %s" % (key, value)
      is_record = True
    else:
      line = filler_sentence(rng)
      is_record = False
    added = len(line) + (1 if lines else 0)
    if size + added > target_bytes and not need_record:
      # A filler line that does not fit gets a few more draws before the document ends.
      misses += 1
      if misses < 4 and not is_record:
        continue
      break
    lines.append(line)
    size += added
    if is_record:
      records.append((key, value))
      keys.add(key)
  return Document("\n".join(lines), records)


@dataclasses.dataclass
class Sample:
  ids: list        # token ids
  targets: list    # 1 where the token is predicted with loss, else 0 (per position of ids)
  kind: str        # "qa", "repeat" or "repeat_chunk"
  text: str        # the same sample as text (for checks)


class SampleBuilder:
  """Turns documents into tokenized chat samples."""

  def __init__(self, tok):
    self.tok = tok
    sp = tok.special_ids
    self.bos = sp[bpe.BOS]
    self.eot = sp[bpe.EOT]
    enc = tok.encode_ordinary
    self.user_header = [sp[bpe.START_HEADER]] + enc("user") + [sp[bpe.END_HEADER]] + enc("\n\n")
    self.assistant_header = ([sp[bpe.START_HEADER]] + enc("assistant") + [sp[bpe.END_HEADER]] +
                             enc("\n\n"))
    self.user_header_text = "%suser%s\n\n" % (bpe.START_HEADER, bpe.END_HEADER)
    self.assistant_header_text = "%sassistant%s\n\n" % (bpe.START_HEADER, bpe.END_HEADER)
    self.repeat_ids = enc(REPEAT_PROMPT)
    self.repeat_part_ids = enc(REPEAT_PART_PROMPT)

  def document_prefix(self, doc_ids):
    """Token ids of the stored prefix: BOS, the user header and the document."""
    return [self.bos] + self.user_header + doc_ids

  def qa(self, doc, doc_ids, questions):
    """A QA sample; `questions` is a list of (key, value), the first asked in the document turn."""
    ids = self.document_prefix(doc_ids)
    targets = [0] * len(ids)
    text = bpe.BOS + self.user_header_text + doc.text
    for i, (key, value) in enumerate(questions):
      q = ("\n\nQ:" if i == 0 else "Q:") + key
      prompt = ([] if i == 0 else self.user_header) + self.tok.encode_ordinary(q) + [self.eot]
      prompt += self.assistant_header
      answer = self.tok.encode_ordinary(value) + [self.eot]
      ids += prompt + answer
      targets += [0] * len(prompt) + [1] * len(answer)
      text += (("" if i == 0 else self.user_header_text) + q + bpe.EOT +
               self.assistant_header_text + value + bpe.EOT)
    return Sample(ids, targets, "qa", text)

  def repeat(self, doc, doc_ids):
    """A full reconstruction sample."""
    ids = self.document_prefix(doc_ids) + self.repeat_ids + [self.eot] + self.assistant_header
    answer = doc_ids + [self.eot]
    text = (bpe.BOS + self.user_header_text + doc.text + REPEAT_PROMPT + bpe.EOT +
            self.assistant_header_text + doc.text + bpe.EOT)
    return Sample(ids + answer, [0] * len(ids) + [1] * len(answer), "repeat", text)

  def repeat_chunk(self, doc, doc_ids, start, length):
    """A chunked reconstruction sample: repeat doc_ids[start:start+length]."""
    assert start >= CHUNK_OVERLAP_TOKENS
    overlap = doc_ids[start - CHUNK_OVERLAP_TOKENS:start]
    ids = (self.document_prefix(doc_ids) + self.repeat_part_ids + overlap + [self.eot] +
           self.assistant_header)
    end = min(len(doc_ids), start + length)
    answer = doc_ids[start:end] + ([self.eot] if end == len(doc_ids) else [])
    return Sample(ids + answer, [0] * len(ids) + [1] * len(answer), "repeat_chunk", "")

  def check_sample(self, sample):
    """Asserts that token-level assembly equals encoding the whole text."""
    if sample.text:
      full = self.tok.encode(sample.text, add_special_tokens=False)
      if full != sample.ids:
        raise AssertionError("sample tokenization differs from whole-text encoding:\n%r" %
                             sample.text)


@dataclasses.dataclass
class LengthMix:
  """Documents of one curriculum stage: length in bytes and number of records."""
  max_bytes: int
  min_bytes: int = 24
  min_records: int = 2
  max_records: int = 1 << 30


def sample_length(rng, mix):
  # Mostly near the top of the stage's range, some anywhere below it.
  if rng.random() < 0.7:
    lo = max(mix.min_bytes, mix.max_bytes // 2)
  else:
    lo = mix.min_bytes
  return int(rng.integers(lo, mix.max_bytes + 1))


def make_training_sample(rng, builder, mix, repeat_fraction, max_questions):
  """One random training sample for a stage."""
  doc = make_document(rng, sample_length(rng, mix), mix.min_records, mix.max_records)
  doc_ids = builder.tok.encode_ordinary(doc.text)
  u = rng.random()
  if u < repeat_fraction:
    if len(doc_ids) > 3 * CHUNK_OVERLAP_TOKENS and rng.random() < 0.35:
      start = int(rng.integers(CHUNK_OVERLAP_TOKENS, len(doc_ids) - CHUNK_OVERLAP_TOKENS))
      length = int(rng.integers(16, max(17, len(doc_ids))))
      return builder.repeat_chunk(doc, doc_ids, start, length)
    return builder.repeat(doc, doc_ids)
  n = min(len(doc.records), int(rng.integers(1, max_questions + 1)))
  order = rng.permutation(len(doc.records))[:n]
  return builder.qa(doc, doc_ids, [doc.records[i] for i in order])


def make_eval_set(rng, builder, lo_bytes, hi_bytes, num_docs, questions_per_doc,
                  min_records=2, max_records=1 << 30):
  """Held-out single-question QA samples (the serving format), with each document's length.

  Returns [(doc_bytes, Sample)].
  """
  out = []
  for _ in range(num_docs):
    draw = lambda: make_document(rng, int(rng.integers(lo_bytes, hi_bytes + 1)), min_records,
                                 max_records)
    doc = draw()
    while len(doc.text.encode()) < lo_bytes:
      doc = draw()
    doc_ids = builder.tok.encode_ordinary(doc.text)
    order = rng.permutation(len(doc.records))[:questions_per_doc]
    for i in order:
      out.append((len(doc.text.encode()), builder.qa(doc, doc_ids, [doc.records[i]])))
  return out


def bpe_training_texts(rng, num_sentences):
  """Text the tokenizer learns its merges from: filler and the fixed prompt phrases.

  Keys and values are left out on purpose: with no merges over upper-case letters
  and digits they stay one token per character, so a value in the document
  (` QXTV`) and in an answer (`QXTV`) share the same tokens after the space.
  """
  texts = [filler_sentence(rng) for _ in range(num_sentences)]
  phrases = ["user", "assistant", REPEAT_PROMPT, REPEAT_PART_PROMPT, "Q:"]
  texts += phrases * max(1, num_sentences // 50)
  texts += KEY_WORDS * max(1, num_sentences // 50)
  return texts


def skip_in_bpe(piece):
  """Pre-tokens that never take part in merges: pure whitespace (so "\\n\\n" at the
  end of a prompt tokenizes as in the middle of a text)."""
  return piece.isspace()
