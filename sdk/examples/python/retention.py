"""Multi-scale retention (Sun et al. 2023, "Retentive Network"), a causal-only
token mixer written in PyTorch: each position reads only itself and earlier
positions, whatever the host asks, as RetNet, RWKV, Mamba and any decoder-style
mixer do. Its parallel form, per head h with decay gamma_h:

    q, k       = x W_q, x W_k                     [B, L, qkv_dim / 2] each (keys half as wide,
    v, g       = x W_v, x W_g                     [B, L, qkv_dim] each    so the layer has the
                                                                          parameters of attention)
    D[i, j]    = gamma_h ** (i - j) if j <= i and key j is real, else 0
    S          = (q k^T / sqrt(d_key)) * D        scores, then each row divided by
                                                  max(|sum_j S[i, j]|, 1)
    out        = (groupnorm(S v) * silu(g)) W_o       norm per position and head

    lrahost run --plugin sdk/examples/python/retention.py:Retention \\
                --task listops --preset smoke

Under CLS pooling LRA reads position 0, which a causal mixer fills with nothing
but itself. The host probes every mixer before training; this one does not
read ahead, so its classifier reads the summary after each example's last real
token instead (docs/rules.md, "Causal mixers and the summary token") and the run
keeps its division.

Retention's recurrent form decodes one token at a time in constant memory
(`lrahost bench --decode`): per head, KV = gamma KV + k^T v and z = gamma z + k,
so row t of S v is q_t KV / sqrt(d_key) and its row sum q_t . z / sqrt(d_key);
`prefill` computes the state after a whole prompt in one decayed sum.
"""
import math

import torch


class Retention(torch.nn.Module):
    lra_capabilities = {"causal", "padding_mask"}

    def __init__(self, d_model, qkv_dim, heads, **spec):
        super().__init__()
        if qkv_dim % (2 * heads):
            raise ValueError("qkv_dim %d is not a multiple of 2 x heads %d" % (qkv_dim, heads))
        self.heads, self.d_key, self.d_value = heads, qkv_dim // (2 * heads), qkv_dim // heads
        self.qk = torch.nn.Linear(d_model, qkv_dim, bias=False)       # q and k, half width each
        self.vg = torch.nn.Linear(d_model, 2 * qkv_dim, bias=False)   # values and the output gate
        self.out = torch.nn.Linear(qkv_dim, d_model, bias=False)
        self.norm = torch.nn.GroupNorm(heads, qkv_dim)
        # RetNet's decays: 1 - 2^(-5 - h) over the heads, from short to long memory.
        exponents = -5.0 - torch.arange(heads, dtype=torch.float64) * (5.0 / max(heads - 1, 1))
        self.register_buffer("log_decay", torch.log1p(-torch.pow(2.0, exponents)).float(), persistent=False)
        torch.nn.init.xavier_uniform_(self.qk.weight, gain=2 ** -2.5)
        torch.nn.init.xavier_uniform_(self.vg.weight, gain=2 ** -2.5)
        torch.nn.init.xavier_uniform_(self.out.weight)

    def forward(self, x, mask):
        B, L, _ = x.shape
        q, k = self.qk(x).chunk(2, dim=-1)
        v, g = self.vg(x).chunk(2, dim=-1)
        heads = lambda t, width: t.reshape(B, L, self.heads, width).transpose(1, 2)  # [B, H, L, width]
        q, k, v = heads(q, self.d_key), heads(k, self.d_key), heads(v, self.d_value)
        i = torch.arange(L, device=x.device)
        distance = (i.view(L, 1) - i.view(1, L)).to(x.dtype)                     # i - j
        decay = torch.exp(self.log_decay.to(x.dtype).view(-1, 1, 1) * distance.clamp(min=0))
        decay = decay * (distance >= 0).to(x.dtype)                              # [H, L, L], causal
        if mask is not None:                                                     # padded keys read as nothing
            decay = decay.unsqueeze(0) * mask.view(B, 1, 1, L).to(x.dtype)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(self.d_key) * decay
        scores = scores / scores.sum(-1, keepdim=True).abs().clamp(min=1.0)
        y = (scores @ v).transpose(1, 2).reshape(B, L, -1)                      # [B, L, qkv_dim]
        y = self.norm(y.reshape(B * L, -1)).view(B, L, -1)                       # per position and head
        return self.out(y * torch.nn.functional.silu(g))

    # Decoding (lra/mixer.h, ABI 1.3): the host calls decode_start once, then
    # decode_step for positions 0, 1, 2, ...; step t returns row t of forward.
    def decode_start(self, batch, dtype, device):
        return [torch.zeros(batch, self.heads, self.d_key, self.d_value, dtype=dtype, device=device),
                torch.zeros(batch, self.heads, self.d_key, dtype=dtype, device=device)]

    def decode_step(self, x, state, position):
        B = x.shape[0]
        q, k = self.qk(x).chunk(2, dim=-1)
        v, g = self.vg(x).chunk(2, dim=-1)
        q, k = q.view(B, self.heads, self.d_key), k.view(B, self.heads, self.d_key)
        v = v.view(B, self.heads, self.d_value)
        gamma = torch.exp(self.log_decay.to(x.dtype)).view(1, -1, 1)              # [1, H, 1]
        kv = state[0] * gamma.unsqueeze(-1) + k.unsqueeze(-1) * v.unsqueeze(-2)   # [B, H, d_key, d_value]
        z = state[1] * gamma + k                                                  # [B, H, d_key]
        scale = math.sqrt(self.d_key)
        row_sum = ((q * z).sum(-1, keepdim=True) / scale).abs().clamp(min=1.0)
        y = ((q.unsqueeze(-2) @ kv).squeeze(-2) / scale / row_sum).reshape(B, -1)
        return self.out(self.norm(y) * torch.nn.functional.silu(g)), [kv, z]

    # A whole prompt in one call (ABI 1.6): the outputs are forward's, and the
    # recurrent state after it is one decayed sum, KV = sum_j gamma^(L-1-j) k_j^T v_j.
    def prefill(self, x, state):
        B, L, _ = x.shape
        _, k = self.qk(x).chunk(2, dim=-1)
        v, _ = self.vg(x).chunk(2, dim=-1)
        k = k.view(B, L, self.heads, self.d_key).transpose(1, 2)                   # [B, H, L, d_key]
        v = v.view(B, L, self.heads, self.d_value).transpose(1, 2)                 # [B, H, L, d_value]
        log_gamma = self.log_decay.to(x.dtype).view(-1, 1)                         # [H, 1]
        lags = torch.arange(L - 1, -1, -1, device=x.device, dtype=x.dtype)         # L-1 .. 0
        weight = torch.exp(log_gamma * lags)                                       # [H, L]
        gamma_L = torch.exp(log_gamma * L)                                         # the old state's decay
        kv = state[0] * gamma_L.unsqueeze(-1) + torch.einsum("hl,bhlk,bhlv->bhkv", weight, k, v)
        z = state[1] * gamma_L + torch.einsum("hl,bhlk->bhk", weight, k)
        return self.forward(x, None), [kv, z]
