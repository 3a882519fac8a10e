"""Builds the embedded demo's two git repositories from ``data/upstream``, ``history`` and ``downstream``.

The upstream is a slime-style history with one commit per PR ("subject (#N)"); the downstream is
translate(upstream at the cutoff) committed as vime, followed by vime's own edits. Commit dates
are fixed, so two builds give the same commit ids.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sync.demo import downstream as ds
from sync.demo.history import AFTER_WINDOW, BEFORE_CUTOFF, CUTOFF_PR, IN_WINDOW, WINDOW, Commit
from sync.gitio import git
from sync.rules import RuleSet, load_rules
from sync.translate import translate_file

DATA_DIR = Path(__file__).parent / "data" / "upstream"
_EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z


@dataclass(frozen=True)
class DemoRepos:
    """Where the demo repositories are and which window to sync."""

    upstream: Path
    downstream: Path
    from_pr: int
    to_pr: int


class _Repo:
    """A git repository written with fixed identities and dates (deterministic commit ids)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tick = 0
        path.mkdir(parents=True, exist_ok=False)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, author: str = "vime-demo") -> str:
        stamp = f"{_EPOCH + 3600 * self.tick} +0000"
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": author,
            "GIT_AUTHOR_EMAIL": f"{author}@users.noreply.github.com",
            "GIT_COMMITTER_NAME": author,
            "GIT_COMMITTER_EMAIL": f"{author}@users.noreply.github.com",
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
        }
        return git(
            self.path, "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false", *args, env=env
        ).decode()

    def write(self, rel: str, content: bytes | str) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)

    def commit(self, subject: str, author: str) -> None:
        self.tick += 1
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", subject, author=author)

    def files(self) -> dict[str, bytes]:
        listed = self.git("ls-files", "-z").split("\0")
        return {rel: (self.path / rel).read_bytes() for rel in listed if rel}


def _apply(repo: _Repo, commit: Commit) -> None:
    for rel, content in commit.writes.items():
        repo.write(rel, content)
    for rel, old, new in commit.edits:
        text = (repo.path / rel).read_text()
        if old not in text:
            raise ValueError(f"demo history: PR #{commit.pr} edit of {rel} does not apply (text not found)")
        repo.write(rel, text.replace(old, new, 1))
    for old_rel, new_rel in commit.renames.items():
        repo.git("mv", old_rel, new_rel)
    for rel in commit.deletes:
        repo.git("rm", "-q", rel)
    subject = commit.subject if commit.pr is None else f"{commit.subject} (#{commit.pr})"
    repo.commit(subject, commit.author)


def _build_upstream(path: Path) -> dict[str, bytes]:
    """Write the upstream history; return its files at the cutoff commit."""
    repo = _Repo(path)
    for source in sorted(p for p in DATA_DIR.rglob("*") if p.is_file()):
        repo.write(source.relative_to(DATA_DIR).as_posix(), source.read_bytes())
    repo.commit("Initial import of slime (#101)", "zhuzilin")
    for commit in BEFORE_CUTOFF:
        _apply(repo, commit)
    at_cutoff = repo.files()
    for commit in IN_WINDOW + AFTER_WINDOW:
        _apply(repo, commit)
    return at_cutoff


def _mapped(rules: RuleSet, upstream_path: str) -> str:
    target = rules.map_path(upstream_path)
    if target is None:
        raise ValueError(f"demo downstream: {upstream_path} is not mirrored by the rules")
    return target


def _build_downstream(path: Path, upstream_at_cutoff: dict[str, bytes], rules: RuleSet) -> None:
    repo = _Repo(path)
    for rel, data in sorted(upstream_at_cutoff.items()):
        result = translate_file(rel, data, rules)
        if result.dst_path is not None:
            repo.write(result.dst_path, result.data)
    repo.commit(f"Import slime at #{CUTOFF_PR}, translated to vLLM by vime-sync", "vime-bot")

    for edit in ds.EDITS:
        target = repo.path / _mapped(rules, edit.upstream_path)
        text = target.read_text()
        if edit.old not in text:
            raise ValueError(f"demo downstream: edit of {target.relative_to(repo.path)} does not apply")
        target.write_text(text.replace(edit.old, edit.new, 1))
    for upstream_path in ds.DELETES:
        repo.git("rm", "-q", _mapped(rules, upstream_path))
    dockerfile = repo.path / _mapped(rules, "docker/Dockerfile")
    lines = dockerfile.read_text().splitlines(keepends=True)
    dockerfile.write_text(ds.DOCKER_FROM + "\n" + "".join(lines[1:]))
    for rel, content in ds.OWN_FILES.items():
        repo.write(rel, content)
    repo.commit("vime: engine defaults, HTTP put, weight-reload extension, own base image", "vime-dev")


def build_demo(dest: Path, rules: RuleSet | None = None) -> DemoRepos:
    """Create ``dest/slime`` (upstream) and ``dest/vime`` (downstream); ``dest`` must not hold them yet."""
    rules = rules or load_rules()
    upstream, downstream = dest / "slime", dest / "vime"
    for existing in (upstream, downstream):
        if existing.exists():
            raise FileExistsError(f"{existing} already exists: choose an empty directory for the demo")
    at_cutoff = _build_upstream(upstream)
    _build_downstream(downstream, at_cutoff, rules)
    return DemoRepos(upstream=upstream, downstream=downstream, from_pr=WINDOW[0], to_pr=WINDOW[1])
