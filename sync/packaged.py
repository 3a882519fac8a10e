"""Where the data that ships with the packages lives: inside the installed package, else the checkout.

A wheel carries ``translations/`` as ``sync/translations`` and ``tests/contract/`` as
``vime/contracts`` (the ``package-dir`` mapping in pyproject.toml), beside the contract runner
``vime/contract_runner.py``. An editable install or a plain checkout has them at the top of the
source tree instead, so each look-up tries the package first and the checkout second.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

CHECKOUT_ROOT = Path(__file__).resolve().parents[1]  # the source tree, when running from one


def _package_dir(package: str, name: str) -> Path | None:
    try:
        found = resources.files(package) / name
    except ModuleNotFoundError:
        return None
    return Path(str(found)) if found.is_dir() else None


def translations_dir() -> Path:
    """The rule tables: ``sync/translations`` in an installed wheel, ``translations/`` in a checkout."""
    return _package_dir("sync", "translations") or CHECKOUT_ROOT / "translations"


def contracts_dir() -> Path:
    """vime's hook contracts: ``vime/contracts`` in an installed wheel, ``tests/contract/`` in a checkout."""
    return _package_dir("vime", "contracts") or CHECKOUT_ROOT / "tests" / "contract"


def contract_runner() -> Path:
    """The contract runner as a file a subprocess can execute (``python -P <file>``)."""
    return Path(str(resources.files("vime") / "contract_runner.py"))


def framework_root() -> Path:
    """The directory that holds this installation's ``vime`` package (site-packages or the checkout)."""
    return Path(str(resources.files("vime"))).parent
