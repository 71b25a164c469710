"""What the GPU peers (text_step_torch.py, text_step_flax.py) share, free of
any framework import: the flags of the Text-backbone step, with the defaults of
`lrahost bench` at 4K (manifests/lra-v1/text.toml's backbone, batch 32, 3
warm-up + 3 x 10 timed steps), so both peers always time the same shapes; and
LRA's fixed sinusoidal position table."""
import argparse
import math

import numpy as np


def text_step_parser(description):
    """The shared flags; a peer adds its own before parse_args()."""
    p = argparse.ArgumentParser(description=description)
    add = p.add_argument
    add("--length", type=int, default=4096)
    add("--batch", type=int, default=32)
    add("--layers", type=int, default=4)
    add("--d-model", type=int, default=256)
    add("--heads", type=int, default=4)
    add("--ffn", type=int, default=1024)
    add("--vocab", type=int, default=257)
    add("--classes", type=int, default=2)
    add("--dropout", type=float, default=0.1)
    add("--warmup", type=int, default=3)
    add("--steps", type=int, default=10)
    add("--repeats", type=int, default=3)
    add("--fp32", action="store_true", help="float32 instead of bfloat16 on the GPU")
    return p


def sinusoidal(max_len, d):
    """[max_len, d] float32: sine on even channels, cosine on odd, computed in
    float64 (lra::host::sinusoidal_positions)."""
    pos = np.arange(max_len, dtype=np.float64)[:, None]
    div = np.exp(np.arange(0, d, 2, dtype=np.float64) * (-math.log(10000.0) / d))
    pe = np.zeros((max_len, d), dtype=np.float64)
    pe[:, 0::2] = np.sin(pos * div)
    pe[:, 1::2] = np.cos(pos * div)[:, : d // 2]
    return pe.astype(np.float32)
