"""Pick the training backend named by ``--train-backend``.

Apart from ``base.py`` on purpose: the backends import the interface from there, so the factory that
imports the backends sits above them all and no module imports its own importer back.
"""

from __future__ import annotations

from argparse import Namespace

from vime.backends.base import TrainBackend


def make_backend(args: Namespace, rank: int, world_size: int) -> TrainBackend:
    """The backend named by ``--train-backend`` (imported only when chosen: Megatron is heavy)."""
    if args.train_backend == "torch":
        from vime.backends.torch_utils.actor import TorchTrainBackend

        return TorchTrainBackend(args, rank, world_size)
    if args.train_backend == "megatron":
        from vime.backends.megatron_utils.backend import MegatronTrainBackend

        return MegatronTrainBackend(args, rank, world_size)
    raise ValueError(f"unknown --train-backend {args.train_backend!r}: choose torch or megatron")
