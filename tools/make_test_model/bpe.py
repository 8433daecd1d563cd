"""Byte-level BPE tokenizer with Hugging Face `tokenizers` semantics.

Trains a GPT-2-style byte-level BPE on a text corpus, encodes and decodes text
exactly as a Hugging Face `tokenizer.json` with a ByteLevel pre-tokenizer, a BPE
model, literal added (special) tokens and a TemplateProcessing post-processor
would, and writes that `tokenizer.json`.

Token ids: 0..255 are the 256 bytes (id == byte value, spelled with GPT-2's
bytes_to_unicode alphabet), then the merged tokens in merge order, then the
special tokens.
"""

import collections
import functools

import regex

# GPT-2's pre-tokenization pattern, as the ByteLevel pre-tokenizer uses it.
GPT2_PATTERN = (
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")
_PRETOKENIZE = regex.compile(GPT2_PATTERN)

BOS = "<|begin_of_text|>"
EOT_TEXT = "<|end_of_text|>"
START_HEADER = "<|start_header_id|>"
END_HEADER = "<|end_header_id|>"
EOT = "<|eot_id|>"
SPECIAL_TOKENS = [BOS, EOT_TEXT, START_HEADER, END_HEADER, EOT]


@functools.lru_cache(maxsize=1)
def bytes_to_unicode():
  """GPT-2's reversible map from the 256 byte values to printable characters."""
  bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) +
        list(range(ord("®"), ord("ÿ") + 1)))
  cs = bs[:]
  n = 0
  for b in range(256):
    if b not in bs:
      bs.append(b)
      cs.append(256 + n)
      n += 1
  return dict(zip(bs, (chr(c) for c in cs)))


def pretokenize(text):
  """Splits text into GPT-2 pre-tokens (strings)."""
  return _PRETOKENIZE.findall(text)


def to_byte_symbols(piece):
  """Maps a pre-token to its byte-level unicode spelling."""
  table = bytes_to_unicode()
  return "".join(table[b] for b in piece.encode("utf-8"))


def train_bpe(texts, num_merges, skip_piece=None):
  """Learns `num_merges` BPE merges from an iterable of texts.

  The most frequent adjacent pair is merged first; ties go to the
  lexicographically smallest pair, so training is deterministic.
  `skip_piece(piece) -> bool` excludes pre-tokens from the statistics.
  Returns the merges as a list of (left, right) symbol pairs.
  """
  word_counts = collections.Counter()
  for text in texts:
    for piece in pretokenize(text):
      if skip_piece is None or not skip_piece(piece):
        word_counts[to_byte_symbols(piece)] += 1
  words = [[list(w), c] for w, c in word_counts.items()]
  merges = []
  for _ in range(num_merges):
    pair_counts = collections.Counter()
    for symbols, count in words:
      for a, b in zip(symbols, symbols[1:]):
        pair_counts[(a, b)] += count
    if not pair_counts:
      break
    best_count = max(pair_counts.values())
    best = min(p for p, c in pair_counts.items() if c == best_count)
    merges.append(best)
    merged = best[0] + best[1]
    for word in words:
      symbols = word[0]
      if len(symbols) < 2:
        continue
      out, i = [], 0
      while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == best[0] and symbols[i + 1] == best[1]:
          out.append(merged)
          i += 2
        else:
          out.append(symbols[i])
          i += 1
      word[0] = out
  return merges


class Tokenizer:
  """A trained byte-level BPE tokenizer plus the Llama-3 style special tokens."""

  def __init__(self, merges):
    self.merges = [tuple(m) for m in merges]
    self.ranks = {m: i for i, m in enumerate(self.merges)}
    table = bytes_to_unicode()
    self.vocab = {table[b]: b for b in range(256)}
    for a, b in self.merges:
      token = a + b
      if token in self.vocab:
        raise ValueError("duplicate merged token %r" % token)
      self.vocab[token] = len(self.vocab)
    self.num_bpe = len(self.vocab)
    self.special_ids = {}
    for name in SPECIAL_TOKENS:
      self.special_ids[name] = len(self.vocab) + len(self.special_ids)
    self.id_to_token = {i: t for t, i in self.vocab.items()}
    self.id_to_token.update({i: t for t, i in self.special_ids.items()})
    self.byte_decoder = {c: b for b, c in table.items()}
    self._cache = {}

  @property
  def vocab_size(self):
    return self.num_bpe + len(self.special_ids)

  @property
  def bos_id(self):
    return self.special_ids[BOS]

  @property
  def eot_id(self):
    return self.special_ids[EOT]

  def _bpe(self, piece):
    """Applies merges to one pre-token, lowest rank first (GPT-2 / HF order)."""
    cached = self._cache.get(piece)
    if cached is not None:
      return cached
    symbols = list(to_byte_symbols(piece))
    while len(symbols) > 1:
      ranked = [(self.ranks.get(p, 1 << 30), p) for p in zip(symbols, symbols[1:])]
      rank, pair = min(ranked)
      if rank == 1 << 30:
        break
      out, i = [], 0
      while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == pair[0] and symbols[i + 1] == pair[1]:
          out.append(pair[0] + pair[1])
          i += 2
        else:
          out.append(symbols[i])
          i += 1
      symbols = out
    ids = [self.vocab[s] for s in symbols]
    if len(self._cache) < 200000:
      self._cache[piece] = ids
    return ids

  def encode_ordinary(self, text):
    """Encodes text that holds no special tokens (they are not looked for)."""
    ids = []
    for piece in pretokenize(text):
      ids.extend(self._bpe(piece))
    return ids

  def split_special(self, text):
    """Splits text on literal special tokens (leftmost, then longest match).

    Returns a list of (is_special, string) parts.
    """
    parts, start = [], 0
    while True:
      best = None
      for name in SPECIAL_TOKENS:
        pos = text.find(name, start)
        if pos >= 0 and (best is None or pos < best[0] or
                         (pos == best[0] and len(name) > len(best[1]))):
          best = (pos, name)
      if best is None:
        break
      pos, name = best
      if pos > start:
        parts.append((False, text[start:pos]))
      parts.append((True, name))
      start = pos + len(name)
    if start < len(text):
      parts.append((False, text[start:]))
    return parts

  def encode(self, text, add_special_tokens=True):
    """Encodes like HF `tokenizer.encode(text, add_special_tokens=...)`."""
    ids = [self.bos_id] if add_special_tokens else []
    for is_special, part in self.split_special(text):
      if is_special:
        ids.append(self.special_ids[part])
      else:
        ids.extend(self.encode_ordinary(part))
    return ids

  def decode(self, ids, skip_special_tokens=False):
    """Decodes like HF's ByteLevel decoder (invalid UTF-8 becomes U+FFFD)."""
    out, pending = [], []
    for i in ids:
      token = self.id_to_token[i]
      if i >= self.num_bpe:
        if pending:
          out.append(bytes(pending).decode("utf-8", errors="replace"))
          pending = []
        if not skip_special_tokens:
          out.append(token)
      else:
        pending.extend(self.byte_decoder[c] for c in token)
    if pending:
      out.append(bytes(pending).decode("utf-8", errors="replace"))
    return "".join(out)

  def to_hf_json(self):
    """The `tokenizer.json` document (a dict) for this tokenizer."""
    added = [{
        "id": self.special_ids[name],
        "content": name,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "special": True,
    } for name in SPECIAL_TOKENS]
    bos = {"SpecialToken": {"id": BOS, "type_id": 0}}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": True,
            "use_regex": True,
        },
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [
                bos,
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": BOS, "type_id": 1}},
                {"Sequence": {"id": "B", "type_id": 1}},
            ],
            "special_tokens": {
                BOS: {"id": BOS, "ids": [self.bos_id], "tokens": [BOS]},
            },
        },
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": True,
            "trim_offsets": True,
            "use_regex": True,
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": dict(sorted(self.vocab.items(), key=lambda kv: kv[1])),
            "merges": ["%s %s" % m for m in self.merges],
        },
    }

  @classmethod
  def from_hf_json(cls, doc):
    """Rebuilds a Tokenizer from a `tokenizer.json` dict written by to_hf_json."""
    merges = [tuple(m.split(" ")) for m in doc["model"]["merges"]]
    tok = cls(merges)
    if tok.vocab != doc["model"]["vocab"]:
      raise ValueError("vocab does not match the merges")
    for entry in doc["added_tokens"]:
      if tok.special_ids.get(entry["content"]) != entry["id"]:
        raise ValueError("special token id mismatch: %r" % entry)
    return tok
