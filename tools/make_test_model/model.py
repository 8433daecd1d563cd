"""A LLaMA-architecture decoder (GQA, RoPE, RMSNorm, SwiGLU, tied embeddings) in PyTorch.

Written to match Hugging Face's LlamaForCausalLM forward pass exactly (parameter
names, rotate_half RoPE, f32 RMSNorm), so its weights load unchanged into any
Llama implementation and its float64 forward serves as the reference.
"""

import dataclasses
import math

import torch
import torch.nn.functional as F
from torch import nn


@dataclasses.dataclass
class ModelConfig:
  vocab_size: int
  hidden_size: int = 128
  num_hidden_layers: int = 4
  num_attention_heads: int = 4
  num_key_value_heads: int = 2
  head_dim: int = 32
  intermediate_size: int = 384
  rms_norm_eps: float = 1e-5
  rope_theta: float = 10000.0
  max_position_embeddings: int = 2048


class RMSNorm(nn.Module):

  def __init__(self, size, eps):
    super().__init__()
    self.weight = nn.Parameter(torch.ones(size))
    self.eps = eps

  def forward(self, x):
    variance = x.pow(2).mean(-1, keepdim=True)
    return x * torch.rsqrt(variance + self.eps) * self.weight


def rope_cos_sin(cfg, positions, dtype):
  """cos and sin tables [T, head_dim] in HF's layout (frequencies repeated twice).

  Computed in float32 for training (as HF does) and in float64 for the float64
  reference, so the reference holds the exact angles.
  """
  work = torch.float64 if dtype == torch.float64 else torch.float32
  inv_freq = 1.0 / (cfg.rope_theta**(
      torch.arange(0, cfg.head_dim, 2, dtype=torch.int64).to(work) / cfg.head_dim))
  freqs = positions.to(work)[:, None] * inv_freq[None, :]
  emb = torch.cat([freqs, freqs], dim=-1)
  return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
  half = x.shape[-1] // 2
  return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Attention(nn.Module):

  def __init__(self, cfg):
    super().__init__()
    self.cfg = cfg
    h, d = cfg.hidden_size, cfg.head_dim
    self.q_proj = nn.Linear(h, cfg.num_attention_heads * d, bias=False)
    self.k_proj = nn.Linear(h, cfg.num_key_value_heads * d, bias=False)
    self.v_proj = nn.Linear(h, cfg.num_key_value_heads * d, bias=False)
    self.o_proj = nn.Linear(cfg.num_attention_heads * d, h, bias=False)

  def forward(self, x, cos, sin, mask):
    cfg = self.cfg
    b, t, _ = x.shape
    q = self.q_proj(x).view(b, t, cfg.num_attention_heads, cfg.head_dim).transpose(1, 2)
    k = self.k_proj(x).view(b, t, cfg.num_key_value_heads, cfg.head_dim).transpose(1, 2)
    v = self.v_proj(x).view(b, t, cfg.num_key_value_heads, cfg.head_dim).transpose(1, 2)
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    group = cfg.num_attention_heads // cfg.num_key_value_heads
    # Query head h reads kv head h // group.
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(cfg.head_dim)
    scores = scores.masked_fill(mask, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, -1)
    return self.o_proj(out)


class MLP(nn.Module):

  def __init__(self, cfg):
    super().__init__()
    self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
    self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
    self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

  def forward(self, x):
    return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):

  def __init__(self, cfg):
    super().__init__()
    self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
    self.self_attn = Attention(cfg)
    self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
    self.mlp = MLP(cfg)

  def forward(self, x, cos, sin, mask):
    x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
    return x + self.mlp(self.post_attention_layernorm(x))


class LlamaBody(nn.Module):

  def __init__(self, cfg):
    super().__init__()
    self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
    self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_hidden_layers))
    self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class Llama(nn.Module):
  """LlamaForCausalLM with tied input/output embeddings; `model.*` names as in HF."""

  def __init__(self, cfg):
    super().__init__()
    self.cfg = cfg
    self.model = LlamaBody(cfg)
    self.reset_parameters()

  def reset_parameters(self):
    for name, p in self.named_parameters():
      if name.endswith("layernorm.weight") or name == "model.norm.weight":
        nn.init.ones_(p)
      else:
        nn.init.normal_(p, std=0.02)
    # Residual-branch outputs start small, as in GPT-2.
    scale = 1.0 / math.sqrt(2 * self.cfg.num_hidden_layers)
    with torch.no_grad():
      for layer in self.model.layers:
        layer.self_attn.o_proj.weight.mul_(scale)
        layer.mlp.down_proj.weight.mul_(scale)

  def forward(self, ids):
    """ids [B, T] -> logits [B, T, V]; positions 0..T-1, causal attention."""
    t = ids.shape[1]
    x = self.model.embed_tokens(ids)
    cos, sin = rope_cos_sin(self.cfg, torch.arange(t), x.dtype)
    mask = torch.ones(t, t, dtype=torch.bool).triu(1)
    for layer in self.model.layers:
      x = layer(x, cos, sin, mask)
    x = self.model.norm(x)
    return F.linear(x, self.model.embed_tokens.weight)

  def num_parameters(self):
    return sum(p.numel() for p in self.parameters())
