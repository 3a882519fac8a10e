"""Check that every ``import vllm…`` / ``from vllm… import name`` under a directory resolves.

    python tools/check_vllm_imports.py TREE [--json]

Exit 0 when every import resolves against the installed vLLM (and vllm-router), 1 otherwise;
one line per unresolved import (path:line: module[.name]: reason). The translator benchmark
runs it on the translated slime tree.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sync.translator.vllm_imports import imports_in_tree, resolve_in_subprocess


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead of lines")
    args = parser.parse_args(argv)
    if not args.tree.is_dir():
        print(f"check_vllm_imports: {args.tree} is not a directory; pass a translated tree", file=sys.stderr)
        return 2
    uses = imports_in_tree(args.tree)
    results = resolve_in_subprocess(uses)
    wrong = [r for r in results if not r.ok]
    if args.json:
        print(
            json.dumps(
                {
                    "imports": len(results),
                    "wrong": len(wrong),
                    "problems": [
                        f"{r.use.path}:{r.use.line}: {r.use.module}{'.' + r.use.name if r.use.name else ''}: {r.reason}"
                        for r in wrong
                    ],
                }
            )
        )
    else:
        for r in wrong:
            name = f".{r.use.name}" if r.use.name else ""
            print(f"{r.use.path}:{r.use.line}: {r.use.module}{name}: {r.reason}")
        print(f"{len(results)} vLLM imports, {len(wrong)} do not resolve", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
