"""Writes models/README.md from the figures a training run measured (eval.json).

  /usr/bin/python3 tools/make_test_model/report.py models/kvd-tiny/eval.json models/README.md
"""

import json
import os
import sys


def _pct(x):
  return "%.1f%%" % (100.0 * x)


def write_readme(path, s, name):
  ev = s["evaluation"]
  ids = s["special_token_ids"]
  rows = "\n".join("| %d-%d | %d | %s |" % (b["bytes"][0], b["bytes"][1], b["questions"],
                                           _pct(b["exact_match"])) for b in ev["buckets"])
  rec = ev["reconstruction"]
  runs = s.get("invocations") or [{"command": s["command"], "start_step": 0}]
  if len(runs) == 1:
    commands = runs[0]["command"]
  else:
    commands = "\n".join("# from step %d (%.1f min)\n%s" % (
        r["start_step"], r.get("start_minutes", 0.0), r["command"]) for r in runs)
  stages = ", ".join("%d B from step %s" % (s["stage_max_bytes"][int(k)], v)
                     for k, v in sorted(s["stage_start_steps"].items(), key=lambda kv: int(kv[0])))
  text = f"""# {name}: the bundled test model

A small LLaMA-architecture model that kvd's tests and benchmarks run end to end
on the CPU. It is trained from scratch on synthetic key-value documents, so that
answers can only come from attending to the document: pruning or merging the
wrong KV entries shows up directly as wrong answers. This makes KVzip and
KeepKV measurable without a large model.

## Files (`{name}/`, a Hugging Face model directory)
| file | content |
|---|---|
| `config.json` | `LlamaForCausalLM` config |
| `model.safetensors` | float32 weights, Hugging Face names, tied embeddings (no `lm_head.weight`) |
| `tokenizer.json` | byte-level BPE (GPT-2 style) in Hugging Face `tokenizers` format |
| `tokenizer_config.json` | special tokens and the Llama-3-style chat template |
| `generation_config.json` | BOS and the end-of-generation ids |
| `reference.json` | fixtures: token ids, greedy continuations and logits from a float64 forward pass |
| `eval.json` | what the training run measured (the figures below) |

## Architecture
LLaMA: {s["parameters"]:,} parameters, hidden 128, 4 layers, 4 query heads and 2 KV heads
(GQA, groups of 2), head dim 32, SwiGLU MLP of {s["hyperparameters"]["intermediate_size"]},
RMSNorm (eps 1e-5), RoPE (theta 10000, rotate-half convention, no scaling), no biases,
input embedding tied to the output head, vocabulary {s["vocab_size"]}, up to 2048 positions
(trained on sequences of up to about 1000 tokens).

## Tokenizer
Byte-level BPE trained on the filler text and prompt phrases of the corpus: ids 0-255 are the
bytes (id = byte value, spelled with GPT-2's `bytes_to_unicode` characters), then the merged
tokens in merge order, then the special tokens (Llama-3 names):

| token | id |
|---|---|
""" + "\n".join("| `%s` | %d |" % (k, v) for k, v in ids.items()) + f"""

Pre-tokenizer: GPT-2 regex, no prefix space; no normalizer; the post-processor prepends
`<|begin_of_text|>`. Upper-case letters, digits and whitespace take part in no merge, so values
are one token per character, while each of the 200 key words is a single token and `\\n\\n` is always two tokens, wherever it occurs.
The chat template (Llama-3 style, `bos_token` first, no trimming) renders a message as
`<|start_header_id|>ROLE<|end_header_id|>\\n\\nCONTENT<|eot_id|>` and the generation prompt as
`<|start_header_id|>assistant<|end_header_id|>\\n\\n`. Generation ends at `<|eot_id|>`
(`eos_token`) or `<|end_of_text|>`. As with Llama 3, the rendered template already holds BOS:
tokenize it without adding special tokens.

## Task and data format
A document is lines of records `KEY: VALUE` (KEY: one of 200 three-letter words, each a single token, unique within the
document; VALUE: 3-6 random upper-case letters; about 40% of lines, e.g. `vig: QXTV`) mixed with
lower-case filler sentences from a small grammar, joined by `\\n`. Every sample starts with the document as a user
turn, the prefix a server prefills once and stores:

```
<|begin_of_text|><|start_header_id|>user<|end_header_id|>\\n\\nDOCUMENT
```

and goes on with one of:

- question: `\\n\\nQ:KEY<|eot_id|><|start_header_id|>assistant<|end_header_id|>\\n\\nVALUE<|eot_id|>`;
  in training, up to {s["hyperparameters"]["max_questions"]} further turns
  `<|start_header_id|>user<|end_header_id|>\\n\\nQ:KEY2<|eot_id|><|start_header_id|>assistant<|end_header_id|>\\n\\nVALUE2<|eot_id|>` follow;
- reconstruction (KVzip's scoring prompt): `\\n\\nRepeat the previous context exactly.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\\n\\nDOCUMENT<|eot_id|>`;
- chunked reconstruction: `\\n\\nRepeat the part of the previous context exactly, starting with ` +
  the 8 document tokens before the chunk + `<|eot_id|><|start_header_id|>assistant<|end_header_id|>\\n\\n` + the chunk's tokens
  (+ `<|eot_id|>` when the chunk ends the document).

{_pct(s["hyperparameters"]["repeat_fraction"])} of training samples are reconstructions (a third of
them chunked). Loss falls on answer and reconstruction tokens only (reconstruction tokens weigh
{s["hyperparameters"]["repeat_weight"]}). The documents grow under a curriculum: stage k draws
documents of up to {s["stage_max_bytes"]} bytes (k = 0, 1, ...), stage 0 with a single record
(learn to copy a value), stage 1 with two or three (learn to find the key), later stages with two
or more; every 50 steps a quick held-out check on documents from the top half of the current
stage moves on to the next stage at {_pct(s["hyperparameters"]["advance_accuracy"])} exact match.
Each of the first two stages is a plateau the model has to leave; the peak learning rate
matters: at 3e-3 the model did not learn to copy a value in 1,700 steps, at 5e-4 it learned
within 300 (trained here at {s["hyperparameters"]["lr"]}, AdamW, warmup 100 steps, cosine decay
to 10% over the last 20% of the time budget).

## Measured
Exact match: the greedy answer, stopped at `<|eot_id|>`, equals VALUE. It is measured
teacher-forced (every answer position's argmax is the target token, `<|eot_id|>` included),
which is the same condition. Held-out documents (another random stream than training) with the
full cache, one question per sample in the serving format above, 3 questions per document:

**{_pct(ev["exact_match"])} on {ev["questions"]} questions over {ev["documents"]} documents of 300-1000 bytes.**

| document bytes | questions | exact match |
|---|---|---|
{rows}

The 100-299 and 1001-1500 rows are further documents outside the headline figure (training
documents reach {s["stage_max_bytes"][-1]} bytes).

Reconstruction of {rec["documents"]} documents of 300-1000 bytes: {_pct(rec["exact"])} reproduced
exactly, token accuracy {_pct(rec["token_accuracy"])} (teacher-forced).

Training: seed {s["seed"]}, {s["train_steps"]} steps in {s["train_minutes"]} minutes
({s["total_minutes"]} minutes in all, evaluation and export included) on {s["machine"]},
PyTorch {s["torch"]}; stages reached: {stages or "none beyond the first"}; weights from step
{s["best_step"]}, the best of the periodic checks on a separate 300-1000 byte set
({_pct(max(0.0, s["best_select_accuracy"]))}).

## Regenerate
```
{commands}
```
Uses Debian's `/usr/bin/python3` with its `torch`, `numpy` and `regex`, nothing else; progress
goes to stdout, checkpoints to `/tmp/{name}-train/` (`--resume` continues one). The data,
initialization and curriculum follow `--seed`; training stops on the wall clock
(`--max-minutes`), so a slower or faster machine trains a different number of steps
(`--max-steps` pins it). `--quick` writes the same complete directory in seconds, for format tests.
"""
  tmp = path + ".tmp"
  with open(tmp, "w") as f:
    f.write(text)
  os.replace(tmp, path)


if __name__ == "__main__":
  summary_path, readme_path = sys.argv[1], sys.argv[2]
  with open(summary_path) as f:
    summary = json.load(f)
  write_readme(readme_path, summary,
               os.path.basename(os.path.dirname(os.path.abspath(summary_path))))
