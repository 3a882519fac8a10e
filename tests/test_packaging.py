"""pyproject.toml lists every package by hand (the folder mappings need it): a new package left out
of the list would be missing from the wheel, so this fails and names it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed_and_every_mapping_exists():
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(tool["packages"])
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("vime", "sync")
        for init in (ROOT / top).rglob("__init__.py")
        if not init.is_relative_to(ROOT / "sync" / "demo" / "data")  # demo repositories: package data
    }
    missing = sorted(on_disk - listed)
    assert not missing, f"add {missing} to [tool.setuptools] packages in pyproject.toml"
    for package, folder in tool["package-dir"].items():
        assert package in listed and (ROOT / folder).is_dir(), (package, folder)
    for package in listed - on_disk:  # mapped folders (and their sub-folders) carry no __init__.py
        assert any(package == p or package.startswith(p + ".") for p in tool["package-dir"]), package
