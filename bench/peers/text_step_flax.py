#!/usr/bin/env python3
"""Training steps/s of the LRA Text backbone in JAX/Flax (linen) with jax.jit:
the peer closest to LRA's own code (google-research/long-range-arena is a
JAX/Flax codebase; its models need the removed `flax.deprecated` API, so this
follows lra_benchmarks/models/transformer/transformer.py and
layers/common_layers.py in current Flax). Compared with
`lrahost bench --plugins transformer --lengths L --batch B` by
scripts/bench-gpu-peers: same shapes, dtype, optimizer and timing protocol as
host/bench/measure_step.cpp and bench/peers/text_step_torch.py.

  model   4 pre-LayerNorm blocks (d_model 256, 4 heads, qkv 256, MLP 1024,
          GELU, dropout 0.1 on embeddings/residuals/MLP and attention), CLS
          token, fixed sinusoidal positions, final LayerNorm, CLS pooling,
          Dense(1024) - relu - Dense(2) head; computation in bfloat16 on GPU
          (parameters float32), as the host's autocast
  inputs  random ids in [1, 257), every position real, on the device
  step    one jitted function: forward, cross-entropy, gradients, optax.adamw
          (lr 1e-4, b1 0.9, b2 0.98, eps 1e-9, weight decay 0.1), buffers donated
  timing  --warmup untimed steps (the first compiles), then --repeats runs of
          --steps steps, block_until_ready at the end of each, median steps/s

Prints one JSON line. Prepared for the GPU machine (JAX, Flax and optax are
installed there); not run on the CPU-only development machine, which has no JAX.
"""
import json
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn

from text_config import sinusoidal, text_step_parser


class Block(nn.Module):
    d_model: int
    heads: int
    qkv: int
    mlp: int
    dropout: float
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x, mask, train):
        h = nn.LayerNorm(epsilon=1e-6, dtype=self.dtype)(x)
        h = nn.MultiHeadDotProductAttention(num_heads=self.heads, qkv_features=self.qkv, out_features=self.d_model,
                                            dropout_rate=self.dropout, use_bias=False, dtype=self.dtype,
                                            deterministic=not train)(h, h, mask=mask)
        x = x + nn.Dropout(self.dropout, deterministic=not train)(h)
        h = nn.LayerNorm(epsilon=1e-6, dtype=self.dtype)(x)
        h = nn.Dense(self.mlp, dtype=self.dtype)(h)
        h = nn.Dropout(self.dropout, deterministic=not train)(nn.gelu(h))
        h = nn.Dense(self.d_model, dtype=self.dtype)(h)
        return x + nn.Dropout(self.dropout, deterministic=not train)(h)


class TextClassifier(nn.Module):
    vocab: int
    classes: int
    length: int
    layers: int
    d_model: int
    heads: int
    mlp: int
    dropout: float
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, ids, train):
        b = ids.shape[0]
        x = nn.Embed(self.vocab, self.d_model, embedding_init=nn.initializers.normal(1.0))(ids)
        cls = self.param("cls", nn.initializers.zeros, (1, 1, self.d_model))
        x = jnp.concatenate([jnp.broadcast_to(cls, (b, 1, self.d_model)), x], axis=1)
        x = x + jnp.asarray(sinusoidal(self.length + 1, self.d_model))[None, : x.shape[1]]
        x = nn.Dropout(self.dropout, deterministic=not train)(x).astype(self.dtype)
        real = jnp.concatenate([jnp.ones((b, 1), bool), ids > 0], axis=1)  # LRA: a token is real when its id > 0
        mask = nn.make_attention_mask(real, real)
        for _ in range(self.layers):
            x = Block(self.d_model, self.heads, self.d_model, self.mlp, self.dropout, self.dtype)(x, mask, train)
        x = nn.LayerNorm(epsilon=1e-6, dtype=self.dtype)(x)[:, 0]
        x = nn.relu(nn.Dense(self.mlp, dtype=self.dtype)(x))
        return nn.Dense(self.classes, dtype=self.dtype)(x).astype(jnp.float32)


def main():
    p = text_step_parser(__doc__.splitlines()[0])
    a = p.parse_args()

    on_gpu = jax.default_backend() == "gpu"
    dtype = jnp.float32 if (a.fp32 or not on_gpu) else jnp.bfloat16
    model = TextClassifier(a.vocab, a.classes, a.length, a.layers, a.d_model, a.heads, a.ffn, a.dropout, dtype)
    key = jax.random.PRNGKey(0)
    k_ids, k_labels, k_init, k_drop = jax.random.split(key, 4)
    ids = jax.random.randint(k_ids, (a.batch, a.length), 1, a.vocab)
    labels = jax.random.randint(k_labels, (a.batch,), 0, a.classes)
    params = model.init({"params": k_init, "dropout": k_drop}, ids[:1], train=False)["params"]
    n_params = sum(int(np.prod(x.shape)) for x in jax.tree_util.tree_leaves(params))
    tx = optax.adamw(1e-4, b1=0.9, b2=0.98, eps=1e-9, weight_decay=0.1)
    opt_state = tx.init(params)

    def loss_fn(params, rng):
        logits = model.apply({"params": params}, ids, train=True, rngs={"dropout": rng})
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    def step_fn(params, opt_state, rng):
        rng, sub = jax.random.split(rng)
        loss, grads = jax.value_and_grad(loss_fn)(params, sub)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, rng, loss

    step = jax.jit(step_fn, donate_argnums=(0, 1))  # parameters and optimizer state updated in place
    rng = k_drop
    t0 = time.perf_counter()
    for _ in range(a.warmup):
        params, opt_state, rng, loss = step(params, opt_state, rng)
    loss.block_until_ready()
    warmup_s = time.perf_counter() - t0
    rates = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        for _ in range(a.steps):
            params, opt_state, rng, loss = step(params, opt_state, rng)
        loss.block_until_ready()
        rates.append(a.steps / (time.perf_counter() - t0))
    dev = jax.devices()[0]
    stats = dev.memory_stats() if hasattr(dev, "memory_stats") else None
    print(json.dumps({
        "impl": "jax-flax-jit",
        "steps_per_s": statistics.median(rates),
        "repetition_steps_per_s": rates,
        "warmup_s": warmup_s,
        "peak_memory_bytes": (stats or {}).get("peak_bytes_in_use"),
        "parameters": n_params,
        "dtype": str(jnp.dtype(dtype)),
        "config": {k: getattr(a, k) for k in ("length", "batch", "layers", "d_model", "heads", "ffn", "dropout",
                                             "warmup", "steps", "repeats")},
        "device": dev.device_kind,
        "jax_version": jax.__version__,
        "python": sys.version.split()[0],
    }, separators=(",", ":")))


if __name__ == "__main__":
    main()
