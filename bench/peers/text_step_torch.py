#!/usr/bin/env python3
"""Training steps/s of the LRA Text backbone written in plain PyTorch, eager or
torch.compile: the peer `lrahost bench --plugins transformer --lengths L
--batch B` is compared with (scripts/bench-gpu-peers). Same shapes, dtype,
optimizer and timing protocol as the host's bench (host/bench/measure_step.cpp):

  model   manifests/lra-v1/text.toml: 4 layers, d_model 256, 4 heads, FFN 1024,
          dropout 0.1 (embeddings, residuals, FFN, attention), pre-LayerNorm
          blocks, CLS token, sinusoidal positions, final LayerNorm, two-layer
          head; written with torch.nn.TransformerEncoder as a user would
          (nn.MultiheadAttention reaches scaled_dot_product_attention in 2.x)
  inputs  random ids in [1, 257), every position real (an all-false key
          padding mask, as the host passes an all-true one), on the device
  step    zero_grad, forward under bfloat16 autocast on CUDA (float32 on the
          CPU), cross-entropy, backward, AdamW (lr 1e-4, betas 0.9/0.98,
          eps 1e-9, weight decay 0.1; --adamw fused|foreach|single)
  timing  --warmup untimed steps, then --repeats runs of --steps steps, one
          device synchronisation at the end of each run, median steps/s

Prints one JSON line. Runs on Debian's python3-torch 1.13 on the CPU too
(eager only; torch.compile needs PyTorch 2).
"""
import json
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from text_config import sinusoidal, text_step_parser


class TextClassifier(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.embed = nn.Embedding(a.vocab, a.d_model)
        self.cls = nn.Parameter(torch.zeros(a.d_model))
        self.register_buffer("pos", torch.from_numpy(sinusoidal(a.length + 1, a.d_model)))
        self.drop = nn.Dropout(a.dropout)
        layer = nn.TransformerEncoderLayer(a.d_model, a.heads, dim_feedforward=a.ffn, dropout=a.dropout,
                                           activation="gelu", layer_norm_eps=1e-6, batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, a.layers, norm=nn.LayerNorm(a.d_model, eps=1e-6),
                                             enable_nested_tensor=False)
        self.head1 = nn.Linear(a.d_model, a.ffn)
        self.head2 = nn.Linear(a.ffn, a.classes)

    def forward(self, ids, padding):
        b = ids.size(0)
        x = torch.cat([self.cls.view(1, 1, -1).expand(b, 1, -1), self.embed(ids)], 1)
        padding = torch.cat([torch.zeros(b, 1, dtype=torch.bool, device=ids.device), padding], 1)
        x = self.drop(x + self.pos[: x.size(1)].unsqueeze(0))
        x = self.encoder(x, src_key_padding_mask=padding)
        return self.head2(F.relu(self.head1(x[:, 0])))


def main():
    p = text_step_parser(__doc__.splitlines()[0])
    add = p.add_argument
    add("--mode", choices=["eager", "compile"], default="eager")
    add("--adamw", choices=["fused", "foreach", "single"], default="fused")
    add("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = p.parse_args()

    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    torch.manual_seed(0)
    model = TextClassifier(a).to(dev)
    model.train()
    params = sum(t.numel() for t in model.parameters())
    opt_kw = dict(lr=1e-4, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.1)
    if a.adamw == "fused":
        if not cuda:
            a.adamw = "single"  # the fused kernel is CUDA-only in the PyTorch this compares with
        else:
            opt_kw["fused"] = True
    if a.adamw == "foreach":
        opt_kw["foreach"] = True
    opt = torch.optim.AdamW(model.parameters(), **opt_kw)
    fwd = torch.compile(model) if a.mode == "compile" else model
    ids = torch.randint(1, a.vocab, (a.batch, a.length), device=dev)
    padding = torch.zeros(a.batch, a.length, dtype=torch.bool, device=dev)
    labels = torch.randint(0, a.classes, (a.batch,), device=dev)
    bf16 = cuda and not a.fp32

    def forward_loss():
        if bf16:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return F.cross_entropy(fwd(ids, padding).float(), labels)
        return F.cross_entropy(fwd(ids, padding), labels)

    def step():
        opt.zero_grad(set_to_none=True)
        forward_loss().backward()
        opt.step()

    def sync():
        if cuda:
            torch.cuda.synchronize()

    t0 = time.perf_counter()
    for _ in range(a.warmup):
        step()
    sync()
    warmup_s = time.perf_counter() - t0
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    rates = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        for _ in range(a.steps):
            step()
        sync()
        rates.append(a.steps / (time.perf_counter() - t0))
    print(json.dumps({
        "impl": f"pytorch-{a.mode}",
        "steps_per_s": statistics.median(rates),
        "repetition_steps_per_s": rates,
        "warmup_s": warmup_s,
        "peak_memory_bytes": torch.cuda.max_memory_allocated() if cuda else None,
        "parameters": params,
        "adamw": a.adamw,
        "dtype": "bfloat16 autocast" if bf16 else "float32",
        "config": {k: getattr(a, k) for k in ("length", "batch", "layers", "d_model", "heads", "ffn", "dropout",
                                             "warmup", "steps", "repeats")},
        "device": torch.cuda.get_device_name(dev) if cuda else "cpu",
        "torch_version": torch.__version__,
        "python": sys.version.split()[0],
    }, separators=(",", ":")))


if __name__ == "__main__":
    main()
