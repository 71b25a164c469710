#!/usr/bin/python3
"""Milliseconds per CPU training step of the LRA encoder written directly in
PyTorch: the Python counterpart of lra_bench_cpu_step (same flags, same JSON).

The model mirrors host/model/backbone.cpp with the reference attention of
sdk/include/lra/attention.h op for op: embedding, CLS, sinusoidal positions,
pre-LayerNorm blocks (softmax attention without biases, tanh-GELU FFN),
final LayerNorm, CLS pooling, two-layer head. The step mirrors
host/train/trainer.cpp: zero_grad, forward, summed cross-entropy / batch,
backward, optional gradient clipping, AdamW (PyTorch 1.13's default
single-tensor implementation, as the C++ AdamW).

Threads: set OPENBLAS_NUM_THREADS before starting Python (OpenBLAS reads it
when it loads); this script sets LibTorch's intra-op pool to 1 thread, as
lra::host::configure_cpu_threads does. scripts/bench-cpu-vs-python does both.
Run with Debian's interpreter (/usr/bin/python3) and python3-torch.
"""
import argparse
import ctypes
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

MASKED_LOGIT = -1e10     # lra::ops::kMaskedLogit
LAYER_NORM_EPS = 1e-6    # backbone.cpp: Flax's default, as in LRA


def mlp_dense(n_in, n_out):
    """LRA feed-forward layers: Xavier-uniform kernels, biases N(0, 1e-6)."""
    layer = nn.Linear(n_in, n_out)
    with torch.no_grad():
        nn.init.xavier_uniform_(layer.weight)
        layer.bias.normal_(0.0, 1e-6)
    return layer


def head_dense(n_in, n_out):
    """Flax's default Dense init for the classifier head: LeCun normal, zero bias."""
    layer = nn.Linear(n_in, n_out)
    with torch.no_grad():
        layer.weight.normal_(0.0, 1.0 / math.sqrt(n_in))
        layer.bias.zero_()
    return layer


def projection(n_in, n_out):
    """lra::QKVO: no bias, Xavier-uniform."""
    layer = nn.Linear(n_in, n_out, bias=False)
    nn.init.xavier_uniform_(layer.weight)
    return layer


def sinusoidal_positions(max_len, d):
    """lra::host::sinusoidal_positions: sine on even channels, cosine on odd."""
    pos = torch.arange(max_len, dtype=torch.double).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.double) * (-math.log(10000.0) / d))
    pe = torch.zeros(max_len, d, dtype=torch.double)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)[:, : d // 2]
    return pe.float()


class Attention(nn.Module):
    """lra::ops::multi_head_attention without rotary or causal masking."""

    def __init__(self, d_model, qkv_dim, heads, dropout):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.q = projection(d_model, qkv_dim)
        self.v = projection(d_model, qkv_dim)
        self.o = projection(qkv_dim, d_model)
        self.k = projection(d_model, qkv_dim)

    def split_heads(self, x):  # [B, L, H*Dh] -> [B, H, L, Dh]
        b, n, hd = x.shape
        return x.view(b, n, self.heads, hd // self.heads).transpose(1, 2)

    @staticmethod
    def merge_heads(x):  # [B, H, L, Dh] -> [B, L, H*Dh]
        b, h, n, d = x.shape
        return x.transpose(1, 2).contiguous().view(b, n, h * d)

    def forward(self, x, key_mask):
        q = self.split_heads(self.q(x))
        k = self.split_heads(self.k(x))
        v = self.split_heads(self.v(x))
        logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        logits = logits.masked_fill(key_mask.logical_not().unsqueeze(1).unsqueeze(2), MASKED_LOGIT)
        probs = torch.softmax(logits, -1)
        if self.dropout > 0.0 and self.training:
            probs = F.dropout(probs, self.dropout, True)
        return self.o(self.merge_heads(torch.matmul(probs, v)))


class Block(nn.Module):
    """lra::host::BlockImpl: pre-LayerNorm mixer and tanh-GELU feed-forward."""

    def __init__(self, a):
        super().__init__()
        self.mixer = Attention(a.d_model, a.qkv_dim, a.heads, a.attention_dropout)
        self.ln_mix = nn.LayerNorm(a.d_model, eps=LAYER_NORM_EPS)
        self.ln_ffn = nn.LayerNorm(a.d_model, eps=LAYER_NORM_EPS)
        self.fc1 = mlp_dense(a.d_model, a.ffn)
        self.fc2 = mlp_dense(a.ffn, a.d_model)
        self.drop = nn.Dropout(a.dropout)

    def forward(self, x, mask):
        mixed = self.mixer(self.ln_mix(x), mask)
        h = x + self.drop(mixed)
        f = self.drop(self.fc2(self.drop(F.gelu(self.fc1(self.ln_ffn(h)), approximate="tanh"))))
        return h + f


class Classifier(nn.Module):
    """lra::host::ClassifierImpl for pooling "cls", sinusoidal positions, one input."""

    def __init__(self, a):
        super().__init__()
        self.embed = nn.Embedding(a.vocab, a.d_model)
        with torch.no_grad():
            self.embed.weight.normal_(0.0, 1.0)  # LRA: N(0, 1), no sqrt(d) scaling
        self.cls = nn.Parameter(torch.zeros(a.d_model))
        self.register_buffer("pos", sinusoidal_positions(a.length + 1, a.d_model))
        self.drop = nn.Dropout(a.dropout)
        self.blocks = nn.ModuleList([Block(a) for _ in range(a.layers)])
        self.final_ln = nn.LayerNorm(a.d_model, eps=LAYER_NORM_EPS)
        self.head1 = head_dense(a.d_model, a.ffn)
        self.head2 = head_dense(a.ffn, a.classes)

    def forward(self, ids, mask):
        x = self.embed(ids)
        b = ids.size(0)
        x = torch.cat([self.cls.view(1, 1, -1).expand(b, 1, self.cls.size(0)), x], 1)
        mask = torch.cat([torch.ones(b, 1, dtype=mask.dtype), mask], 1)
        x = x + self.pos.narrow(0, 0, x.size(1)).unsqueeze(0)
        x = self.drop(x)
        for block in self.blocks:
            x = block(x, mask)
        x = self.final_ln(x)
        return self.head2(torch.relu(self.head1(x.select(1, 0))))


def openblas_threads():
    """OpenBLAS's thread count (the library LibTorch already loaded), or -1."""
    try:
        return ctypes.CDLL("libopenblas.so.0").openblas_get_num_threads()
    except (OSError, AttributeError):
        return -1


def parse_args():
    """The flags of lra_bench_cpu_step (shared by train_step_nn.py)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = p.add_argument
    add("--layers", type=int, default=2)
    add("--d-model", type=int, default=64)
    add("--heads", type=int, default=2)
    add("--qkv-dim", type=int, default=0, help="0 = d-model")
    add("--ffn", type=int, default=128)
    add("--length", type=int, default=128, help="tokens per example, without the CLS")
    add("--batch", type=int, default=8)
    add("--vocab", type=int, default=257)
    add("--classes", type=int, default=2)
    add("--dropout", type=float, default=0.1)
    add("--attention-dropout", type=float, default=0.1)
    add("--grad-clip", type=float, default=0.0)
    add("--warmup", type=int, default=5)
    add("--steps", type=int, default=20)
    add("--reps", type=int, default=3)
    add("--threads", type=int, default=0, help="only checked against OPENBLAS_NUM_THREADS")
    add("--torch-threads", type=int, default=0,
        help="override LibTorch's intra-op threads (0 = 1, the host's choice with OpenBLAS)")
    add("--seed", type=int, default=0)
    add("--trace", default="", help="write a chrome://tracing profile of --steps more steps to this file")
    a = p.parse_args()
    a.qkv_dim = a.qkv_dim or a.d_model
    return a


def set_threads(a):
    """lra::host::configure_cpu_threads with OpenBLAS: LibTorch's pool gets one
    thread, OpenBLAS the cores (from OPENBLAS_NUM_THREADS, read at load time).
    Returns OpenBLAS's thread count."""
    torch.set_num_threads(a.torch_threads or 1)
    blas = openblas_threads()
    if a.threads > 0 and blas not in (-1, a.threads):
        sys.exit(f"{sys.argv[0]}: OpenBLAS runs {blas} threads, not --threads {a.threads}; "
                 f"set OPENBLAS_NUM_THREADS={a.threads} before starting Python")
    return blas


def time_steps(model, a):
    """Times `model`'s training step on one fixed random batch (seed a.seed,
    lengths in [L/2, L], the rest padding); returns the report's fields."""
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.1)

    n = a.length
    ids = torch.randint(1, a.vocab, (a.batch, n), dtype=torch.long)
    lengths = torch.randint(n // 2, n + 1, (a.batch, 1), dtype=torch.long)
    mask = torch.arange(n, dtype=torch.long).unsqueeze(0) < lengths
    ids.masked_fill_(mask.logical_not(), 0)
    labels = torch.randint(0, a.classes, (a.batch,), dtype=torch.long)
    params = list(model.parameters())

    # Seconds per phase over the timed steps, as lra_bench_cpu_step splits them.
    phase = [0.0, 0.0, 0.0, 0.0]
    timing = False
    clock = time.perf_counter

    def step():
        t0 = clock()
        opt.zero_grad()
        t1 = clock()
        logits = model(ids, mask)
        loss = F.cross_entropy(logits, labels, reduction="sum") / a.batch
        t2 = clock()
        loss.backward()
        t3 = clock()
        if a.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(params, a.grad_clip)
        opt.step()
        if timing:
            t4 = clock()
            for i, dt in enumerate((t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                phase[i] += dt
        return loss

    for _ in range(a.warmup):
        step()
    timing = True
    wall_ms, cpu_ms = [], []
    for _ in range(a.reps):
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(a.steps):
            loss = step()
        wall_ms.append(1e3 * (time.perf_counter() - t0) / a.steps)
        cpu_ms.append(1e3 * (time.process_time() - c0) / a.steps)
    timing = False
    if a.trace:
        with torch.autograd.profiler.profile() as prof:
            for _ in range(a.steps):
                step()
        prof.export_chrome_trace(a.trace)
    timed = a.steps * a.reps
    return {
        "ms_per_step": statistics.median(wall_ms),
        "ms_per_step_reps": wall_ms,
        "cpu_ms_per_step": statistics.median(cpu_ms),
        "phase_ms": {k: 1e3 * v / timed for k, v in zip(("zero_grad", "forward", "backward", "optimizer"), phase)},
        "final_loss": loss.item(),
        "parameters": sum(t.numel() for t in params),
        "config": {k: getattr(a, k) for k in ("layers", "d_model", "heads", "qkv_dim", "ffn", "length", "batch",
                                             "vocab", "classes", "dropout", "attention_dropout", "grad_clip",
                                             "warmup", "steps", "reps")},
        "torch_threads": torch.get_num_threads(),
        "torch_version": torch.__version__,
        "python": sys.version.split()[0],
    }


def main():
    a = parse_args()
    blas = set_threads(a)
    torch.manual_seed(a.seed)
    report = time_steps(Classifier(a), a)
    report.update({"impl": "python", "blas_threads": blas})
    print(json.dumps(report, separators=(",", ":")))


if __name__ == "__main__":
    main()
