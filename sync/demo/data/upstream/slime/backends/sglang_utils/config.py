"""Per-engine server settings derived from the training arguments."""


def engine_config(args) -> dict:
    return {
        "mem_fraction_static": args.sglang_mem_fraction_static,
        "context_length": args.sglang_context_length,
        "max_running_requests": args.sglang_max_running_requests,
    }
