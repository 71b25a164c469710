"""Multi-head softmax attention as an lrahost mixer: the built-in
`transformer`'s computation, written in PyTorch.

    lrahost run --plugin sdk/examples/python/softmax_attention.py:SoftmaxAttention \\
                --task listops --preset smoke
"""
import math

import torch
import torch.nn.functional as F

try:  # inside lrahost: its dropout (the same masks as a C++ mixer's, fast on the CPU)
    from lrahost import dropout
except ImportError:  # plain PyTorch
    def dropout(x, p, training):
        return F.dropout(x, p, training)


class SoftmaxAttention(torch.nn.Module):
    lra_capabilities = {"causal", "padding_mask", "attention_probs"}
    lra_options = {}

    def __init__(self, d_model, heads, qkv_dim, max_len, causal, attention_dropout, layer_index, seed,
                 rotary_base, **unused):
        super().__init__()
        self.heads, self.causal, self.dropout = heads, causal, attention_dropout
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

    def forward(self, x, mask):
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        # Scaling q, not the [L, L] logits, and masking in place: one pass less.
        logits = torch.matmul(q * (1.0 / math.sqrt(q.shape[-1])), k.transpose(-2, -1))  # [B, H, L, L]
        masked = None
        if self.causal:
            masked = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=x.device).triu(1)
        elif mask is not None:  # True = real token; LRA masks query and key alike (outer product)
            masked = ~(mask[:, None, :, None] & mask[:, None, None, :])
        if mask is not None and self.causal:
            masked = masked | ~mask[:, None, None, :]
        if masked is not None:
            logits.masked_fill_(masked, -1e10)
        probs = torch.softmax(logits, dim=-1)
        if self.lra_record_attention:
            self.lra_last_attention = probs.detach()
        probs = dropout(probs, self.dropout, self.training)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(x.shape[0], x.shape[1], -1)
        return self.o(out)
