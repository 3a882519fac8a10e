"""The review page in a real headless browser (Debian's chromium driven by playwright): it shows the
queue, lets a reviewer choose options and edit text, and exports a decisions.json that resolve accepts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from window_helpers import FakeRules, build_scenario, fake_translate

from sync.window import run_window
from sync.window.resolve import resolve_branch

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is missing: run scripts/bootstrap.sh (it installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def test_choose_export_and_resolve(tmp_path, browser):
    sc = build_scenario(tmp_path)
    result = run_window(
        sc.upstream, sc.downstream, to_pr=14, from_pr=11, rules=FakeRules(), translate_fn=fake_translate
    )
    doc = json.loads((result.report_dir / "decisions.json").read_text())
    ids = {(q["file"], q["kind"]): q["id"] for q in doc["questions"]}
    page = browser.new_page(accept_downloads=True)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((result.report_dir / "review.html").as_uri())

    assert page.locator("article.question").count() == len(doc["questions"])
    assert page.locator("#open-decide").inner_text() == "3"
    c = ids[("vime/c.py", "conflict")]
    assert "Y = 'downstream'" in page.locator(f"#q-{c} .side pre").first.inner_text()
    page.locator("#filter-Decide").click()
    assert page.locator("article.question:visible").count() == 3
    page.locator("#filter-all").click()

    page.check(f"#opt-{c}-edit")
    page.fill(f"#edit-{c}", "Y = 'from the browser'\n")
    page.check(f"#opt-{ids[('vime/both.py', 'add_add')]}-both")
    page.check(f"#opt-{ids[('vime/latin.txt', 'conflict')]}-theirs")
    page.check(f"#opt-{ids[('vime/icon.bin', 'binary')]}-theirs")
    assert page.locator("#open-decide").inner_text() == "0"
    with page.expect_download() as info:
        page.click("#export")
    download = info.value
    assert download.suggested_filename == "decisions.json"
    target = result.report_dir / "decisions.json"
    download.save_as(str(target))
    assert errors == []

    exported = json.loads(target.read_text())
    by_id = {q["id"]: q for q in exported["questions"]}
    assert by_id[c]["decision"] == "edit" and by_id[c]["edit"] == "Y = 'from the browser'\n"
    assert by_id[ids[("vime/both.py", "add_add")]]["decision"] == "both"
    assert by_id[ids[("vime/icon.bin", "binary")]]["decision"] == "theirs"
    assert (
        by_id[ids[("vime/e.py", "modify_delete")]]["decision"] == "ours"
    )  # the Confirm default, pre-selected
    assert exported["window"] == doc["window"] and exported["files"] == doc["files"]
    assert json.loads(page.locator("#export-output").input_value()) == exported

    resolve_branch(result.worktree)
    assert (result.worktree / "vime/c.py").read_text() == "X = 1\nY = 'from the browser'\nZ = 3\n"
    page.close()


def test_page_is_self_contained_and_escapes_script_end(tmp_path, browser):
    from sync.reports.review_page import render_review_page

    doc = {
        "schema": "vime-sync/decisions/v1",
        "window": {"name": "slime-1-2", "from": 1, "to": 2, "cutoff": "a" * 40, "tip": "b" * 40, "branch": "sync/slime-1-2"},
        "files": {},
        "questions": [{
            "id": "Q1", "kind": "conflict", "file": "x.py", "hunk": 0, "lines": [1, 7], "prs": [2], "rules": [],
            "tier": "Decide", "options": ["ours", "theirs", "both", "edit"], "default": None, "key": "k",
            "summary": "s", "marker_size": 7, "sides": {"ours": "</script><b>x</b>", "base": "", "theirs": "t"},
            "alternative": None, "decision": None, "edit": None,
        }],
    }  # fmt: skip
    html = render_review_page(doc)
    assert "http://" not in html and "https://" not in html and "<link" not in html
    page_file = tmp_path / "review.html"
    page_file.write_text(html)
    page = browser.new_page()
    page.goto(page_file.as_uri())
    assert page.locator("#q-Q1 .side pre").first.inner_text() == "</script><b>x</b>"
    assert page.locator("#title").inner_text() == "Review: slime #1..#2"
    page.close()


def test_a_grouped_question_lists_its_sites_and_exports_a_per_site_edit(tmp_path, browser):
    from sync.reports.review_page import render_review_page

    sites = [
        {"file": f"vime/{n}.py", "lines": [i, i], "prs": [pr], "snippet": f"W = pull_weights({i})", "key": f"k{i}",
         "decision": None, "edit": None}
        for n, i, pr in (("a", 3, 7), ("b", 9, 8))
    ]  # fmt: skip
    doc = {
        "schema": "vime-sync/decisions/v1",
        "window": {"name": "slime-1-2", "from": 1, "to": 2, "cutoff": "a" * 40, "tip": "b" * 40, "branch": "sync/slime-1-2"},
        "files": {},
        "questions": [{
            "id": "Q1", "kind": "unsupported", "file": "vime/a.py", "hunk": None, "lines": [3, 3], "prs": [7, 8],
            "rules": ["r.pull"], "tier": "Confirm", "options": ["keep", "edit"], "default": "keep", "key": "g",
            "summary": "rule r.pull (2 sites in 2 files)", "marker_size": 7, "sides": {"theirs": "W = pull_weights(3)"},
            "alternative": None, "decision": None, "edit": None, "sites": sites, "diff": None,
        }],
    }  # fmt: skip
    page_file = tmp_path / "review.html"
    page_file.write_text(render_review_page(doc))
    page = browser.new_page(accept_downloads=True)
    page.goto(page_file.as_uri())
    rows = page.locator("#q-Q1 table.sites tr")
    assert (
        rows.count() == 3 and "vime/b.py:9" in rows.nth(2).inner_text() and "#8" in rows.nth(2).inner_text()
    )
    assert page.locator("#opt-Q1-edit").count() == 0  # a group is edited per site
    rows.nth(2).locator("input[type=checkbox]").check()
    rows.nth(2).locator("textarea").fill("W = None")
    page.click("#export")
    exported = json.loads(page.locator("#export-output").input_value())
    q = exported["questions"][0]
    assert q["decision"] == "keep" and q["sites"][0]["decision"] is None
    assert (q["sites"][1]["decision"], q["sites"][1]["edit"]) == ("edit", "W = None")
    page.close()
