"""The example softmax attention (softmax_attention.py) with its attention
computed by the host: lrahost.softmax_attention is the SDK's
lra::ops::softmax_attention, the very function the built-in `transformer`
calls. A Python mixer gets from it what a C++ mixer gets: LRA's masking, the
host's attention dropout, and on CUDA (LibTorch 2.x) the fused attention
kernels, with head dimensions that are not a multiple of 8 zero-padded so the
fused kernels take them.

    lrahost run --plugin sdk/examples/python/host_attention.py:HostAttention \\
                --task listops --preset smoke

Outside the host (plain Python, no `lrahost` module) it computes the same
thing in PyTorch, through SoftmaxAttention.forward.
"""
from softmax_attention import SoftmaxAttention

try:
    from lrahost import softmax_attention
except ImportError:  # plain Python
    softmax_attention = None


class HostAttention(SoftmaxAttention):
    def forward(self, x, mask):
        if softmax_attention is None:
            return super().forward(x, mask)
        q, k, v = self.qkv_heads(x)
        # The padding mask masks keys, and queries too (a padded query's row is
        # uniform, as in LRA) unless the mixer runs causally.
        out = softmax_attention(q, k, v, key_mask=mask, causal=self.causal, dropout_p=self.dropout,
                                training=self.training, query_mask=mask, return_probs=self.lra_record_attention)
        if self.lra_record_attention:
            out, probs = out
            self.lra_last_attention = probs
        return self.merge(out)
