"""Command-line flags that configure the SGLang rollout engines."""


def add_sglang_arguments(parser):
    group = parser.add_argument_group("sglang")
    group.add_argument("--sglang-mem-fraction-static", type=float, default=0.8)
    group.add_argument("--sglang-max-running-requests", type=int, default=None)
    group.add_argument("--sglang-context-length", type=int, default=None)
    group.add_argument("--sglang-server-host", type=str, default="127.0.0.1")
    group.add_argument("--sglang-server-port", type=int, default=30000)
    return parser
