"""Multi-head softmax attention as an lrahost mixer: the built-in
`transformer`'s computation, written in PyTorch.

    lrahost run --plugin sdk/examples/python/softmax_attention.py:SoftmaxAttention \\
                --task listops --preset smoke

It computes what the built-in does (sdk/include/lra/attention.h,
multi_head_attention), operation for operation: given the built-in's
proj.q/k/v/o weights as q/k/v/o it gives the same outputs, probabilities and
losses (tests/unit/mixers/test_python.cpp checks it).
"""
import math

import torch

try:  # inside lrahost: the host's attention dropout (lra/dropout.h), whose masks
    # do not depend on how a batch is split over ranks or micro-batches
    from lrahost import dropout
except ImportError:  # plain Python
    def dropout(x, p, training):
        return torch.nn.functional.dropout(x, p, training)

# The logit of a masked position (lra::ops::kMaskedLogit): finite, so a row
# with every key masked is a uniform average instead of NaN.
MASKED_LOGIT = -1e10


def rotary_embed(x, base):
    """Rotary positions (lra/rotary.h): channel pairs (i, i + Dh/2) of position
    p rotated by p * base^(-2i/Dh), angles in float32. x: [B, H, L, Dh]."""
    L, Dh = x.shape[2], x.shape[3]
    f32 = dict(dtype=torch.float32, device=x.device)
    inv_freq = torch.pow(base, -torch.arange(0, Dh, 2, **f32) / Dh)
    angles = torch.outer(torch.arange(0, L, **f32), inv_freq)
    angles = torch.cat([angles, angles], -1)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    rotated_half = torch.cat([-x[..., Dh // 2:], x[..., :Dh // 2]], -1)
    return x * cos + rotated_half * sin


class SoftmaxAttention(torch.nn.Module):
    lra_capabilities = {"causal", "padding_mask", "attention_probs", "rotary"}
    lra_options = {}

    def __init__(self, d_model, heads, qkv_dim, max_len, causal, attention_dropout, layer_index, seed,
                 rotary_base, **unused):
        super().__init__()
        self.heads, self.causal, self.dropout, self.rotary_base = heads, causal, attention_dropout, rotary_base
        # LRA's projections: no biases, Xavier-uniform weights (lra::QKVO).
        self.q = torch.nn.Linear(d_model, qkv_dim, bias=False)
        self.k = torch.nn.Linear(d_model, qkv_dim, bias=False)
        self.v = torch.nn.Linear(d_model, qkv_dim, bias=False)
        self.o = torch.nn.Linear(qkv_dim, d_model, bias=False)
        for lin in (self.q, self.k, self.v, self.o):
            torch.nn.init.xavier_uniform_(lin.weight)
        self.lra_record_attention = False
        self.lra_last_attention = None

    def split(self, t):  # [B, L, H*dh] -> [B, H, L, dh]
        B, L, _ = t.shape
        return t.view(B, L, self.heads, -1).transpose(1, 2)

    def qkv_heads(self, x):  # the queries (rotated), keys (rotated) and values, each [B, H, L, dh]
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        if self.rotary_base > 0:
            q, k = rotary_embed(q, self.rotary_base), rotary_embed(k, self.rotary_base)
        return q, k, v

    def merge(self, out):  # [B, H, L, dh] -> the output projection of [B, L, H*dh]
        return self.o(out.transpose(1, 2).reshape(out.shape[0], out.shape[2], -1))

    def forward(self, x, mask):
        q, k, v = self.qkv_heads(x)
        logits = torch.matmul(q * (1.0 / math.sqrt(q.shape[-1])), k.transpose(-2, -1))  # [B, H, L, L]
        masked = None
        if mask is not None:  # True = real token
            masked = ~mask[:, None, None, :]  # padded keys, [B, 1, 1, L]
        if self.causal:
            future = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=x.device).triu(1)
            masked = future if masked is None else masked | future
        elif mask is not None:
            # LRA masks with the outer product of query and key masks: a padded
            # query's row is uniform over every key. Not in causal mode, where
            # that row would read the future.
            masked = masked | ~mask[:, None, :, None]
        if masked is not None:
            logits = logits.masked_fill(masked, MASKED_LOGIT)
        probs = torch.softmax(logits, dim=-1)
        if self.lra_record_attention:
            self.lra_last_attention = probs.detach()
        probs = dropout(probs, self.dropout, self.training)
        return self.merge(torch.matmul(probs, v))
