#!/usr/bin/env python3
"""Which key lengths cuDNN's fused attention gets wrong on this GPU.

lra/attention.h turns cuDNN's SDPA kernel off only for masked calls whose key
length is 64 mod 128 (pytorch/pytorch#196678), keeping it elsewhere for speed.
This checks that rule on the machine at hand: masked attention as the SDK
calls it (an additive [B, 1, 1, L] padding mask of -1e10, one example padded
to two thirds, bfloat16), cuDNN's kernel forced, against PyTorch's math kernel
in float32. Prints one line per length and a JSON summary on the last line;
exits 1 when cuDNN is wrong at a length the rule leaves it on, 0 otherwise
(also when cuDNN is unavailable: nothing to check). scripts/gpu-check runs it.

    python3 tests/scripts/cudnn_attention_lengths.py [--lengths 64,100,...]
"""
import argparse
import json
import sys

import torch
import torch.nn.functional as F

MASKED_LOGIT = -1e10   # lra::kMaskedLogit
TOLERANCE = 3e-2       # of the reference's scale: test_device_parity's bfloat16 tolerance


def rule_turns_cudnn_off(length):
    return length % 128 == 64


def attention(q, k, v, mask, backend, dtype):
    from torch.nn.attention import sdpa_kernel  # PyTorch 2.3+, as the rule's guard
    q, k, v = (t.detach().to(dtype).requires_grad_(True) for t in (q, k, v))
    with sdpa_kernel(backend):
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.to(dtype))
    return y, q, k, v


def check(length, device, head_dim=64):
    torch.manual_seed(length)
    shape = (2, 4, length, head_dim)
    q, k, v = (torch.randn(shape, device=device) for _ in range(3))
    real = torch.ones(2, length, dtype=torch.bool, device=device)
    real[1, 2 * length // 3:] = False
    mask = torch.zeros(2, 1, 1, length, device=device).masked_fill(~real[:, None, None, :], MASKED_LOGIT)
    probe = torch.randn(shape, device=device) * real[:, None, :, None]
    worst = 0.0
    results = {}
    from torch.nn.attention import SDPBackend
    for name, backend, dtype in (("ref", SDPBackend.MATH, torch.float32),
                                 ("cudnn", SDPBackend.CUDNN_ATTENTION, torch.bfloat16)):
        y, qq, kk, vv = attention(q, k, v, mask, backend, dtype)
        (y.float() * probe).sum().backward()
        results[name] = [y.float() * real[:, None, :, None], qq.grad.float(), kk.grad.float(), vv.grad.float()]
    for got, want in zip(results["cudnn"], results["ref"]):
        scale = max(1.0, want.abs().max().item())
        diff = (got - want).abs().max().item()
        worst = max(worst, float("inf") if diff != diff else diff / (TOLERANCE * scale))
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="63,64,65,100,128,192,320,704,1001,1025,2001,2049,4001,4097")
    ap.add_argument("--head-dims", default="8,32,64", help="head dimensions (8: the parity test's transformer)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"checked": False, "why": "no CUDA device"}))
        return 0
    rows, wrong_where_kept = [], []
    for length, head_dim in ((int(x), int(h)) for h in args.head_dims.split(",") for x in args.lengths.split(",")):
        try:
            worst = check(length, "cuda", head_dim)
        except RuntimeError as e:  # cuDNN refused the shape: nothing runs there
            print(f"length {length}, head dim {head_dim}: cuDNN did not run ({str(e).splitlines()[0]})")
            rows.append({"length": length, "head_dim": head_dim, "ran": False})
            continue
        ok = worst <= 1.0
        off = rule_turns_cudnn_off(length)
        print(f"length {length}, head dim {head_dim}: largest difference {worst:.3g} of the tolerance, "
              f"{'right' if ok else 'WRONG'}; lra/attention.h {'turns cuDNN off' if off else 'keeps cuDNN'}")
        rows.append({"length": length, "head_dim": head_dim, "ran": True, "worst": worst, "right": ok, "rule_turns_off": off})
        if not ok and not off:
            wrong_where_kept.append((length, head_dim))
    print(json.dumps({"checked": True, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                      "cudnn": torch.backends.cudnn.version(), "wrong": [(r["length"], r["head_dim"]) for r in rows if r.get("ran") and not r["right"]],
                      "wrong_where_kept": wrong_where_kept, "rows": rows}))
    return 1 if wrong_where_kept else 0


if __name__ == "__main__":
    sys.exit(main())
