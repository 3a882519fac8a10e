"""``--save-hf`` never loses a directory (vime/utils/hf_copy.py): the moves, on real directories."""

import logging

import pytest

from vime.utils.hf_copy import MARKER, hf_copy_path, publish, staging_dir, template_error


def _staged(dest, text: str):
    staged = staging_dir(dest)
    staged.mkdir(parents=True)
    (staged / "model.safetensors").write_text(text)
    return staged


@pytest.mark.parametrize(
    ("template", "needle"),
    [("/x/hf_{step}", "not {step}"), ("/x/hf_{rollout_id", "hf_{rollout_id}"), ("/x/hf_{}", "not {}")],
)
def test_templates_other_than_rollout_id_are_refused(template, needle):
    assert needle in template_error(template)


def test_good_templates_pass_and_fill_in_the_step():
    assert template_error("/x/hf_{rollout_id}") is None and template_error("/x/latest") is None
    assert str(hf_copy_path("/x/hf_{rollout_id}", 7)) == "/x/hf_7"


def test_a_new_path_gets_the_export_and_the_marker(tmp_path):
    dest = tmp_path / "hf_0"
    assert publish(_staged(dest, "w0"), dest, 0) == dest
    assert (dest / "model.safetensors").read_text() == "w0" and (dest / MARKER).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf_0"]  # no staging left


def test_an_earlier_vime_export_is_replaced(tmp_path):
    dest = tmp_path / "latest"
    publish(_staged(dest, "w0"), dest, 0)
    assert publish(_staged(dest, "w1"), dest, 1) == dest
    assert (dest / "model.safetensors").read_text() == "w1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest"]


def test_a_directory_vime_did_not_write_is_left_alone(tmp_path, caplog):
    dest = tmp_path / "mine"
    dest.mkdir()
    (dest / "notes.txt").write_text("the user's")
    with caplog.at_level(logging.WARNING):
        final = publish(_staged(dest, "w3"), dest, 3)
    assert final == tmp_path / "mine.vime-step3" and (final / "model.safetensors").read_text() == "w3"
    assert sorted(p.name for p in dest.iterdir()) == ["notes.txt"]
    assert (dest / "notes.txt").read_text() == "the user's"
    assert "vime did not write it" in caplog.text
