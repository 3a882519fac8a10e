"""Run hook contract files against your own plugin, from a checkout: the same as ``vime-contract``.

    python tools/run_contract.py tests/contract/test_reward_contract.py --custom-rm-path my_pkg.rm.score

The runner itself is ``vime/contract_runner.py`` (shipped in the wheel); this file runs it by path,
so the ``vime`` that a caller's PYTHONPATH names (a sync worktree's) is still the one the contracts see.
"""

import runpy
from pathlib import Path

if __name__ == "__main__":
    runpy.run_path(
        str(Path(__file__).resolve().parents[1] / "vime" / "contract_runner.py"), run_name="__main__"
    )
