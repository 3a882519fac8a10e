"""The torch backend's training modes beside the RL loss: SFT and a custom loss.

``--loss-type sft_loss`` trains on the masked response log-likelihood, ``custom_loss`` calls the
user's slime-style loss on the model's logits (``vime/backends/loss_hooks.py``). The advantage
hooks (``--custom-advantage-function-path``, on-policy distillation) are both backends':
``vime/backends/train_prep.py``.
"""

from __future__ import annotations

from argparse import Namespace

from torch import nn

from vime.algorithms.loss_select import LossSelection, sft_loss
from vime.backends.loss_hooks import custom_loss
from vime.backends.torch_utils.forward import pad_inputs, response_logprobs
from vime.backends.train_data import TrainBatch, pad_2d
from vime.utils.misc import load_function


def sft_forward_loss(model: nn.Module, args: Namespace, agg_mode: str):
    """``--loss-type sft_loss``: negative log-likelihood of the loss-masked response tokens."""

    def forward(piece: TrainBatch, denominator: float):
        log_probs, _ = response_logprobs(model, piece.tokens, piece.response_lengths)
        return sft_loss(log_probs, pad_2d(piece.loss_masks), agg_mode, denominator)

    return forward


def custom_forward_loss(model: nn.Module, args: Namespace):
    """``--loss-type custom_loss``: the user's loss on this micro-batch's logits (slime's signature)."""
    fn = load_function(LossSelection.from_args(args).custom_loss_function_path)

    def forward(piece: TrainBatch, denominator: float):
        input_ids, attention_mask = pad_inputs(piece.tokens)
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
        return custom_loss(fn, args, piece, logits, denominator)

    return forward
