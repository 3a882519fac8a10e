"""sync/gitio.py (git plumbing through subprocess) against GitPython for what a window does.

    pip install --target /tmp/gp gitpython        # not a dependency of vime; only this benchmark needs it
    PYTHONPATH=/tmp/gp .venv/bin/python benchmarks/bench_gitio.py [--repo PATH] [--repeats 7]

For one commit of the repository (default: the embedded demo's upstream, built in a temporary
directory; ``--repo`` e.g. a bare clone of slime): the file list with blob ids (``ls_tree``), every
blob's bytes (``BlobReader``, one ``cat-file --batch`` process), and 50 ``rev_parse`` calls. Each
is timed ``--repeats`` times; the median of each side and their ratio are printed as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sync.gitio import BlobReader, git_text, ls_tree, rev_parse


def _median_s(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _gitpython_tree(repo, commit: str) -> dict[str, tuple[str, str]]:
    return {
        item.path: (f"{item.mode:o}", item.hexsha)
        for item in repo.commit(commit).tree.traverse()
        if item.type == "blob"
    }


def main() -> None:
    import git  # GitPython

    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--repo", type=Path, default=None, help="a git repository (default: the demo's upstream)"
    )
    parser.add_argument("--repeats", type=int, default=7)
    a = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-gitio-") as scratch:
        if a.repo is None:
            from sync.demo.build import build_demo

            path = build_demo(Path(scratch) / "demo").upstream
        else:
            path = a.repo
        commit = git_text(path, "rev-parse", "HEAD")
        revs = git_text(path, "rev-list", "--max-count=50", commit).splitlines()
        repo = git.Repo(path)
        files = ls_tree(path, commit)
        assert _gitpython_tree(repo, commit) == files, "the two sides disagree on the tree"

        def read_all_plumbing() -> None:
            with BlobReader(path) as reader:
                for _, oid in files.values():
                    reader.read(oid)

        def read_all_gitpython() -> None:
            for _, oid in files.values():
                repo.odb.stream(bytes.fromhex(oid)).read()

        cases = {
            "ls_tree": (lambda: ls_tree(path, commit), lambda: _gitpython_tree(repo, commit)),
            "read_all_blobs": (read_all_plumbing, read_all_gitpython),
            "rev_parse_x50": (
                lambda: [rev_parse(path, r) for r in revs],
                lambda: [repo.commit(r).tree.hexsha for r in revs],  # .tree reads the object
            ),
        }
        results = {"repo": str(a.repo or "demo upstream"), "files": len(files), "repeats": a.repeats}
        for name, (plumbing, gitpython) in cases.items():
            ours, theirs = _median_s(plumbing, a.repeats), _median_s(gitpython, a.repeats)
            results[name] = {
                "gitio_ms": round(ours * 1e3, 2),
                "gitpython_ms": round(theirs * 1e3, 2),
                "gitpython_over_gitio": round(theirs / ours, 2),
            }
        repo.close()
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
