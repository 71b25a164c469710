#!/usr/bin/python3
"""Milliseconds per CPU training step of the LRA encoder as a PyTorch user
would write it with the stock layers: torch.nn.TransformerEncoder
(norm_first=True, batch_first=True, GELU), nn.MultiheadAttention inside it,
a key padding mask, AdamW. The idiomatic peer of lra_bench_cpu_step (same
flags, same JSON as train_step.py, "impl": "torch.nn").

What differs from the host's model, as the stock layers fix it (PyTorch 1.13):
the attention projections carry biases (4 x d_model more parameters per
layer: about 0.1% of the Text backbone) and are one packed [3d, d] matrix,
GELU is the exact erf form (the host's is LRA's tanh form), masked keys get
-inf instead of -1e10, and the final LayerNorm is the encoder's `norm`.
Everything else (embedding, CLS, sinusoidal positions, dropout 0.1 on
embeddings, attention, residuals and FFN, the two-layer head, AdamW
settings, the step) is the host's.

Threads: as train_step.py (OPENBLAS_NUM_THREADS before Python starts;
LibTorch's pool set to one thread). Run with Debian's /usr/bin/python3.
"""
import json
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import train_step as mirror  # the argument parser, positions, head init and thread check are shared


class Classifier(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.embed = nn.Embedding(a.vocab, a.d_model)
        with torch.no_grad():
            self.embed.weight.normal_(0.0, 1.0)
        self.cls = nn.Parameter(torch.zeros(a.d_model))
        self.register_buffer("pos", mirror.sinusoidal_positions(a.length + 1, a.d_model))
        self.drop = nn.Dropout(a.dropout)
        layer = nn.TransformerEncoderLayer(a.d_model, a.heads, dim_feedforward=a.ffn, dropout=a.dropout,
                                           activation="gelu", layer_norm_eps=mirror.LAYER_NORM_EPS,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, a.layers,
                                             norm=nn.LayerNorm(a.d_model, eps=mirror.LAYER_NORM_EPS),
                                             enable_nested_tensor=False)
        self.head1 = mirror.head_dense(a.d_model, a.ffn)
        self.head2 = mirror.head_dense(a.ffn, a.classes)

    def forward(self, ids, mask):
        b = ids.size(0)
        x = torch.cat([self.cls.view(1, 1, -1).expand(b, 1, self.cls.size(0)), self.embed(ids)], 1)
        mask = torch.cat([torch.ones(b, 1, dtype=mask.dtype), mask], 1)
        x = self.drop(x + self.pos.narrow(0, 0, x.size(1)).unsqueeze(0))
        x = self.encoder(x, src_key_padding_mask=mask.logical_not())
        return self.head2(torch.relu(self.head1(x.select(1, 0))))


def main():
    a = mirror.parse_args()
    if a.qkv_dim != a.d_model:
        sys.exit("train_step_nn.py: nn.TransformerEncoderLayer has qkv_dim = d_model")
    blas = mirror.set_threads(a)
    torch.manual_seed(a.seed)
    model = Classifier(a)
    report = mirror.time_steps(model, a)
    report.update({"impl": "torch.nn", "blas_threads": blas})
    print(json.dumps(report, separators=(",", ":")))


if __name__ == "__main__":
    main()
