"""vime's own argument groups, one file per concern (slime's flag names where the meaning is the same)."""

from vime.utils.args.algorithm import add_algorithm_arguments
from vime.utils.args.checkpoint import add_checkpoint_arguments
from vime.utils.args.cluster import add_cluster_arguments
from vime.utils.args.custom_config import add_custom_config_arguments
from vime.utils.args.data import add_data_arguments
from vime.utils.args.debug import add_debug_arguments
from vime.utils.args.engines import add_engine_arguments
from vime.utils.args.eval import add_eval_arguments
from vime.utils.args.fault_tolerance import add_fault_tolerance_arguments
from vime.utils.args.fully_async import add_fully_async_arguments
from vime.utils.args.lora import add_lora_arguments
from vime.utils.args.loss_hooks import add_loss_hook_arguments
from vime.utils.args.moe import add_moe_arguments
from vime.utils.args.opd import add_opd_arguments
from vime.utils.args.refusals import add_refused_arguments
from vime.utils.args.reward import add_reward_arguments
from vime.utils.args.rollout import add_rollout_arguments
from vime.utils.args.train_backend import add_train_backend_arguments
from vime.utils.args.wandb import add_wandb_arguments
from vime.utils.args.weight_sync import add_weight_sync_arguments

VIME_GROUPS = (
    add_cluster_arguments,
    add_rollout_arguments,
    add_fully_async_arguments,
    add_engine_arguments,
    add_weight_sync_arguments,
    add_data_arguments,
    add_eval_arguments,
    add_algorithm_arguments,
    add_loss_hook_arguments,
    add_opd_arguments,
    add_lora_arguments,
    add_moe_arguments,
    add_reward_arguments,
    add_checkpoint_arguments,
    add_wandb_arguments,
    add_fault_tolerance_arguments,
    add_debug_arguments,
    add_custom_config_arguments,
    add_refused_arguments,
)

__all__ = ["VIME_GROUPS", "add_train_backend_arguments"]
