#!/usr/bin/python3
"""Checks a model directory written by make_test_model.py against itself.

Reads the files back independently of the training code path: parses
model.safetensors (layout, alignment, names, shapes), rebuilds the tokenizer from
tokenizer.json and re-derives every tokenizer fixture and its round trip,
reloads the weights into a float64 model and recomputes the reference logits
and greedy continuations.

  /usr/bin/python3 tools/make_test_model/check_model_dir.py models/kvd-tiny
"""

import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import bpe  # noqa: E402
import export  # noqa: E402
import model as model_lib  # noqa: E402


def check_safetensors(path, cfg):
  with open(path, "rb") as f:
    blob = f.read()
  (n,) = struct.unpack("<Q", blob[:8])
  assert n % 8 == 0, "header not padded to 8 bytes"
  header = json.loads(blob[8:8 + n])
  assert header.pop("__metadata__") == {"format": "pt"}
  names = list(header)
  assert names == sorted(names), "tensors not sorted by name"
  offset = 0
  for name in names:
    info = header[name]
    begin, end = info["data_offsets"]
    assert begin == offset, "tensor %s not contiguous" % name
    assert end - begin == 4 * int(np.prod(info["shape"])), name
    offset = end
  assert 8 + n + offset == len(blob)
  h, kv = cfg["hidden_size"], cfg["num_key_value_heads"] * cfg["head_dim"]
  q = cfg["num_attention_heads"] * cfg["head_dim"]
  inter = cfg["intermediate_size"]
  want = {"model.embed_tokens.weight": [cfg["vocab_size"], h], "model.norm.weight": [h]}
  for i in range(cfg["num_hidden_layers"]):
    p = "model.layers.%d." % i
    want.update({
        p + "input_layernorm.weight": [h],
        p + "post_attention_layernorm.weight": [h],
        p + "self_attn.q_proj.weight": [q, h],
        p + "self_attn.k_proj.weight": [kv, h],
        p + "self_attn.v_proj.weight": [kv, h],
        p + "self_attn.o_proj.weight": [h, q],
        p + "mlp.gate_proj.weight": [inter, h],
        p + "mlp.up_proj.weight": [inter, h],
        p + "mlp.down_proj.weight": [h, inter],
    })
  got = {k: v["shape"] for k, v in header.items()}
  assert got == want, "tensor names/shapes differ: %s" % (set(got.items()) ^ set(
      (k, tuple(v)) for k, v in want.items()))
  tensors = export.read_safetensors(path)
  print("safetensors: %d tensors, %d parameters, layout ok" %
        (len(tensors), sum(t.size for t in tensors.values())))
  return tensors


def main(out_dir):
  load = lambda name: json.load(open(os.path.join(out_dir, name), encoding="utf-8"))
  cfg = load("config.json")
  tensors = check_safetensors(os.path.join(out_dir, "model.safetensors"), cfg)
  tok = bpe.Tokenizer.from_hf_json(load("tokenizer.json"))
  assert tok.vocab_size == cfg["vocab_size"]
  tcfg = load("tokenizer_config.json")
  gen = load("generation_config.json")
  assert tok.special_ids[tcfg["eos_token"]] in gen["eos_token_id"]
  assert gen["bos_token_id"] == cfg["bos_token_id"] == tok.bos_id
  ref = load("reference.json")

  for case in ref["tokenizer_cases"]:
    text = case["text"]
    assert tok.encode(text) == case["ids"], text
    assert tok.encode(text, add_special_tokens=False) == case["ids_no_special"], text
    assert case["ids"] == [tok.bos_id] + case["ids_no_special"], text
    back = tok.decode(case["ids_no_special"])
    assert back == text, "round trip failed: %r -> %r" % (text, back)
  print("tokenizer: %d cases re-encode and round-trip" % len(ref["tokenizer_cases"]))

  mcfg = model_lib.ModelConfig(
      vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"],
      num_hidden_layers=cfg["num_hidden_layers"], num_attention_heads=cfg["num_attention_heads"],
      num_key_value_heads=cfg["num_key_value_heads"], head_dim=cfg["head_dim"],
      intermediate_size=cfg["intermediate_size"], rms_norm_eps=cfg["rms_norm_eps"],
      rope_theta=cfg["rope_theta"], max_position_embeddings=cfg["max_position_embeddings"])
  m64 = model_lib.Llama(mcfg).double()
  m64.load_state_dict({k: torch.from_numpy(v).double() for k, v in tensors.items()})
  m32 = model_lib.Llama(mcfg)
  m32.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()})
  for case in ref["cases"]:
    assert tok.encode(case["prompt"]) == case["input_ids"], case["name"]
    seq = case["input_ids"] + case["greedy_ids"][:-1]
    want = np.array(case["logits"])
    assert want.shape == (len(seq), cfg["vocab_size"]), case["name"]
    with torch.no_grad():
      got64 = m64(torch.tensor([seq]))[0].numpy()
      got32 = m32(torch.tensor([seq]))[0].double().numpy()
    err64 = np.abs(got64 - want).max()
    err32 = np.abs(got32 - want).max()
    argmax = got64[len(case["input_ids"]) - 1:].argmax(-1).tolist()
    assert argmax == case["greedy_ids"], case["name"]
    assert err64 < 1e-9, err64
    print("case %-18s %3d tokens: max |logit diff| float64 %.1e, float32 %.1e; greedy %r" %
          (case["name"], len(seq), err64, err32, case["greedy_text"]))
  print("ok")


if __name__ == "__main__":
  main(sys.argv[1] if len(sys.argv) > 1 else "models/kvd-tiny")
