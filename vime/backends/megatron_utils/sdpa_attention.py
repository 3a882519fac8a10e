"""Core attention through ``torch.nn.functional.scaled_dot_product_attention``.

Megatron-core's local spec ships an unfused attention (a full score matrix per head); without
TransformerEngine that is the slow path on GPUs. PyTorch's SDPA picks flash / memory-efficient
kernels on CUDA and a plain kernel on the CPU, with the same causal semantics.
``--attention-backend`` (``config.attention_backend``) narrows the choice: flash, fused
(memory-efficient), unfused (math), auto (SDPA decides). Every SDPA kernel accumulates the
softmax in fp32, which is what ``--attention-softmax-in-fp32`` asks for.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from megatron.core.transformer.dot_product_attention import DotProductAttention

from vime.backends.attention_kernels import sdpa_choice


class SDPACoreAttention(DotProductAttention):
    """Drop-in for ``DotProductAttention`` (causal self-attention only, no packed sequences).

    ``kernel`` is ``--attention-backend`` (a layer-spec parameter: megatron-core's own
    ``attention_backend`` field would also set Transformer Engine's environment switches).
    """

    def __init__(self, *args, kernel: str = "auto", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.kernel = kernel

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        attn_mask_type=None,
        attention_bias: torch.Tensor | None = None,
        packed_seq_params=None,
    ) -> torch.Tensor:
        """[s, b, heads, d] in, [s, b, heads*d] out, like the unfused attention it replaces."""
        if packed_seq_params is not None or attention_bias is not None:
            raise ValueError("SDPACoreAttention supports plain causal attention only (no packing, no bias)")
        seq, batch = query.shape[0], query.shape[1]
        q, k, v = (t.permute(1, 2, 0, 3) for t in (query, key, value))  # [b, heads, s, d]
        groups = q.shape[1] // k.shape[1]
        if groups > 1:
            k = k.repeat_interleave(groups, dim=1)
            v = v.repeat_interleave(groups, dim=1)
        with sdpa_choice(self.kernel):
            out = F.scaled_dot_product_attention(
                q,
                k,
                v,
                is_causal=True,
                dropout_p=self.attention_dropout.p if self.training else 0.0,
                scale=self.softmax_scale,
            )
        return out.permute(2, 0, 1, 3).reshape(seq, batch, -1)
