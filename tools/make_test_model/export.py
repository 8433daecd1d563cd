"""Writes (and reads back) the Hugging Face model directory.

Files: config.json, model.safetensors, tokenizer.json, tokenizer_config.json,
generation_config.json and reference.json (fixtures from a float64 forward
pass). The safetensors writer and reader are self-contained: an 8-byte little-
endian header length, a JSON header padded with spaces to 8-byte alignment,
then the tensors' raw little-endian data, sorted by name.
"""

import json
import os
import struct

import numpy as np
import torch

import bpe

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    " + message['content'] + '<|eot_id|>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
    "{% endif %}")

GREEDY_STEPS = 24


def write_safetensors(path, tensors):
  """tensors: {name: float32 numpy array}. Writes F32 tensors sorted by name."""
  header, blobs, offset = {}, [], 0
  for name in sorted(tensors):
    array = np.ascontiguousarray(tensors[name], dtype="<f4")
    data = array.tobytes()
    header[name] = {
        "dtype": "F32",
        "shape": list(array.shape),
        "data_offsets": [offset, offset + len(data)],
    }
    blobs.append(data)
    offset += len(data)
  header["__metadata__"] = {"format": "pt"}
  raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
  raw += b" " * (-len(raw) % 8)
  tmp = path + ".tmp"
  with open(tmp, "wb") as f:
    f.write(struct.pack("<Q", len(raw)))
    f.write(raw)
    for data in blobs:
      f.write(data)
  os.replace(tmp, path)


def read_safetensors(path):
  """Reads a safetensors file of F32 tensors back into {name: numpy array}."""
  with open(path, "rb") as f:
    blob = f.read()
  (n,) = struct.unpack("<Q", blob[:8])
  header = json.loads(blob[8:8 + n].decode("utf-8"))
  header.pop("__metadata__", None)
  base, out, end = 8 + n, {}, 0
  for name, info in header.items():
    if info["dtype"] != "F32":
      raise ValueError("unexpected dtype %s for %s" % (info["dtype"], name))
    begin, stop = info["data_offsets"]
    array = np.frombuffer(blob[base + begin:base + stop], dtype="<f4")
    out[name] = array.reshape(info["shape"]).copy()
    end = max(end, stop)
  if base + end != len(blob):
    raise ValueError("trailing bytes in %s" % path)
  return out


def model_tensors(model):
  """The HF tensor dict for a Llama model (tied: no lm_head.weight)."""
  return {
      name: p.detach().to(torch.float32).cpu().numpy()
      for name, p in model.state_dict().items()
  }


def hf_config(cfg, tok):
  return {
      "architectures": ["LlamaForCausalLM"],
      "model_type": "llama",
      "vocab_size": cfg.vocab_size,
      "hidden_size": cfg.hidden_size,
      "intermediate_size": cfg.intermediate_size,
      "num_hidden_layers": cfg.num_hidden_layers,
      "num_attention_heads": cfg.num_attention_heads,
      "num_key_value_heads": cfg.num_key_value_heads,
      "head_dim": cfg.head_dim,
      "hidden_act": "silu",
      "max_position_embeddings": cfg.max_position_embeddings,
      "rms_norm_eps": cfg.rms_norm_eps,
      "rope_theta": cfg.rope_theta,
      "rope_scaling": None,
      "attention_bias": False,
      "attention_dropout": 0.0,
      "mlp_bias": False,
      "initializer_range": 0.02,
      "pretraining_tp": 1,
      "tie_word_embeddings": True,
      "use_cache": True,
      "bos_token_id": tok.bos_id,
      "eos_token_id": [tok.special_ids[bpe.EOT], tok.special_ids[bpe.EOT_TEXT]],
      "torch_dtype": "float32",
  }


def tokenizer_config(tok, model_max_length):
  return {
      "added_tokens_decoder": {
          str(tok.special_ids[name]): {
              "content": name,
              "lstrip": False,
              "normalized": False,
              "rstrip": False,
              "single_word": False,
              "special": True,
          } for name in bpe.SPECIAL_TOKENS
      },
      "bos_token": bpe.BOS,
      "eos_token": bpe.EOT,
      "chat_template": CHAT_TEMPLATE,
      "clean_up_tokenization_spaces": False,
      "model_input_names": ["input_ids", "attention_mask"],
      "model_max_length": model_max_length,
      "tokenizer_class": "PreTrainedTokenizerFast",
  }


def generation_config(tok):
  return {
      "bos_token_id": tok.bos_id,
      "eos_token_id": [tok.special_ids[bpe.EOT], tok.special_ids[bpe.EOT_TEXT]],
      "do_sample": False,
  }


def _write_json(path, doc, indent=2):
  tmp = path + ".tmp"
  with open(tmp, "w", encoding="utf-8") as f:
    json.dump(doc, f, indent=indent, ensure_ascii=False)
    f.write("\n")
  os.replace(tmp, path)


def write_model_files(out_dir, model, tok):
  """Everything but reference.json: config, weights, tokenizer files."""
  os.makedirs(out_dir, exist_ok=True)
  cfg = model.cfg
  _write_json(os.path.join(out_dir, "config.json"), hf_config(cfg, tok))
  write_safetensors(os.path.join(out_dir, "model.safetensors"), model_tensors(model))
  _write_json(os.path.join(out_dir, "tokenizer.json"), tok.to_hf_json())
  _write_json(os.path.join(out_dir, "tokenizer_config.json"),
              tokenizer_config(tok, cfg.max_position_embeddings))
  _write_json(os.path.join(out_dir, "generation_config.json"), generation_config(tok))


# Texts for tokenizer fixtures: ASCII, contractions, digits, whitespace runs,
# non-ASCII, special tokens inside text, the empty string, punctuation runs.
TOKENIZER_TEXTS = [
    "",
    "hello",
    "Hello, world!",
    "the old river waits near the quiet bridge.",
    "K7F2: QX4T9",
    "Q: K7F2",
    "Repeat the previous context exactly.",
    "it's here, they're there, we've seen, I'm in, you'll go, he'd say",
    "IT'S LOUD and 'quoted' words",
    "numbers 0 12 345 6789 1234567890 3.14159 -42",
    "a  b   c    d",
    "   leading spaces",
    "trailing spaces   ",
    "line one\nline two\n\nline four\n\n\n",
    "\n\n",
    "tabs\tand\t\tmore\ttabs",
    "mixed \t \n whitespace \r\n runs",
    "café résumé naïve élan",
    "中文字符测试",
    "emoji 🙂 and 👍🏽 and 🚀!",
    "Ελληνικά και русский текст",
    "<|begin_of_text|>",
    "before<|eot_id|>after",
    "<|start_header_id|>user<|end_header_id|>\n\nQ: AB12<|eot_id|>",
    "<|start_header_id|>assistant<|end_header_id|>\n\n",
    "text <|end_of_text|> more <|begin_of_text|><|begin_of_text|>",
    "<|not_special|> <|eot_id",
    "!!! ??? ... --- *** ;;; :) (-: [x] {y} <z>",
    "path/to/file.txt?a=1&b=2#frag",
    "mail@example.com says \"hi\" -- ok...",
    "MiXeD CaSe WoRdS and camelCaseIdentifiers",
    "x" * 40,
]


def _forward64(model64, ids):
  with torch.no_grad():
    return model64(torch.tensor([ids], dtype=torch.long))[0]


def reference_cases(model, tok, prompts):
  """Runs the float64 forward: greedy continuation and logits at every position.

  prompts: [(name, text)]; each text is encoded with BOS.
  """
  model64 = type(model)(model.cfg).double()
  model64.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
  model64.eval()
  cases = []
  for name, text in prompts:
    ids = tok.encode(text)
    greedy, margins = [], []
    seq = list(ids)
    for _ in range(GREEDY_STEPS):
      logits = _forward64(model64, seq)[-1]
      top = torch.topk(logits, 2).values
      margins.append(float(top[0] - top[1]))
      nxt = int(torch.argmax(logits))
      greedy.append(nxt)
      seq.append(nxt)
    all_logits = _forward64(model64, ids + greedy[:-1])
    cases.append({
        "name": name,
        "prompt": text,
        "input_ids": ids,
        "greedy_ids": greedy,
        "greedy_text": tok.decode(greedy),
        "greedy_min_margin": min(margins),
        "logits": all_logits.tolist(),
    })
  return cases


def write_reference(out_dir, model, tok, prompts):
  cases = reference_cases(model, tok, prompts)
  tcases = [{
      "text": t,
      "ids": tok.encode(t),
      "ids_no_special": tok.encode(t, add_special_tokens=False),
  } for t in TOKENIZER_TEXTS]
  doc = {
      "model": "kvd-tiny",
      "note": ("logits: float64 forward pass of the float32 weights (exact RoPE angles); "
               "greedy_ids: 24 argmax steps, not stopped at <|eot_id|>; greedy_min_margin: "
               "smallest top-1 minus top-2 logit over those steps"),
      "cases": cases,
      "tokenizer_cases": tcases,
  }
  path = os.path.join(out_dir, "reference.json")
  tmp = path + ".tmp"
  with open(tmp, "w", encoding="utf-8") as f:
    # Compact; floats as Python's repr (shortest string that reads back exactly).
    json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
    f.write("\n")
  os.replace(tmp, path)
  return doc
