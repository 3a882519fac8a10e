"""slime's own training and rollout flags."""

import argparse

from slime.backends.sglang_utils.arguments import add_sglang_arguments


def parse_args(argv=None):
    parser = argparse.ArgumentParser("slime")
    parser.add_argument("--rollout-temperature", type=float, default=1.0)
    parser.add_argument("--rollout-top-p", type=float, default=1.0)
    parser.add_argument("--rollout-max-response-len", type=int, default=1024)
    parser.add_argument("--n-samples-per-prompt", type=int, default=8)
    parser.add_argument("--custom-rm-path", type=str, default=None)
    add_sglang_arguments(parser)
    return parser.parse_args(argv)
