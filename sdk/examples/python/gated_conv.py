"""A gated depthwise-convolution token mixer (Dauphin et al. 2017's gated
linear unit with a per-channel kernel), written in PyTorch: the Python twin
of sdk/examples/gated_conv (the C++ SDK example).

    v, g = split(x W_in)          x [B, L, d_model] -> 2 x [B, L, qkv_dim]
    y    = conv_k(v * mask) * sigmoid(g)
    out  = y W_out

    lrahost run --plugin sdk/examples/python/gated_conv.py:GatedConv \\
                --task listops --preset smoke --set mixer.kernel_size=7

Padded positions are zeroed before the convolution, so a real token's output
never depends on padding; in causal mode the window only looks left.
"""
import torch
import torch.nn.functional as F


class GatedConv(torch.nn.Module):
    lra_capabilities = {"causal", "padding_mask"}
    lra_options = {"kernel_size": 5, "dilated": False}

    def __init__(self, d_model, qkv_dim, max_len, causal, layer_index, kernel_size, dilated, **spec):
        super().__init__()
        if kernel_size < 1:
            raise ValueError("kernel_size must be at least 1, got %d" % kernel_size)
        self.width = qkv_dim
        # Taps 2^layer apart when dilated, never wider than the sequence.
        dilation = 1
        if dilated and kernel_size > 1:
            widest = max(1, (max_len - 1) // (kernel_size - 1))
            for _ in range(layer_index):
                if dilation * 2 > widest:
                    break
                dilation *= 2
        reach = (kernel_size - 1) * dilation
        self.pad_left = reach if causal else reach // 2
        self.pad_right = reach - self.pad_left
        self.proj_in = torch.nn.Linear(d_model, 2 * qkv_dim, bias=False)
        self.proj_out = torch.nn.Linear(qkv_dim, d_model, bias=False)
        self.conv = torch.nn.Conv1d(qkv_dim, qkv_dim, kernel_size, groups=qkv_dim, dilation=dilation)
        torch.nn.init.xavier_uniform_(self.proj_in.weight)
        torch.nn.init.xavier_uniform_(self.proj_out.weight)

    def forward(self, x, mask):
        value, gate = self.proj_in(x).split(self.width, dim=-1)
        if mask is not None:  # a real token never reads padding
            value = value * mask.unsqueeze(-1).to(value.dtype)
        seq = F.pad(value.transpose(1, 2), (self.pad_left, self.pad_right))  # [B, C, L + reach]
        mixed = self.conv(seq).transpose(1, 2)
        return self.proj_out(mixed * torch.sigmoid(gate))
