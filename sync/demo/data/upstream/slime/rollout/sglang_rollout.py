"""Default rollout: sends prompts to the SGLang router and reads tokens and logprobs back."""

from slime.utils.http_utils import post


async def generate(args, sample, sampling_params: dict):
    url = f"http://{args.sglang_router_ip}:{args.sglang_router_port}/generate"
    payload = {
        "input_ids": sample.tokens,
        "sampling_params": sampling_params,
        "return_logprob": True,
    }
    output = await post(url, payload)
    meta_info = output["meta_info"]
    new_tokens = [item[1] for item in meta_info["output_token_logprobs"]]
    new_logprobs = [item[0] for item in meta_info["output_token_logprobs"]]
    sample.tokens = sample.tokens + new_tokens
    sample.response_length += len(new_tokens)
    sample.rollout_log_probs = (sample.rollout_log_probs or []) + new_logprobs
    match meta_info["finish_reason"]["type"]:
        case "length":
            sample.status = sample.Status.TRUNCATED
        case "stop":
            sample.status = sample.Status.COMPLETED
    return sample


def default_sampling_params(args) -> dict:
    return {
        "temperature": args.rollout_temperature,
        "top_p": args.rollout_top_p,
        "max_new_tokens": args.rollout_max_response_len,
        "no_stop_trim": True,
    }
