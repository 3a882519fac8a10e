"""Build the tiny local Qwen2-shaped model used by tests and the CPU demo: `python tools/build_tiny_model.py DEST`."""

from pathlib import Path

import typer

from vime.utils.tiny_model import build_tiny_model


def main(dest: Path, seed: int = typer.Option(0, help="Seed for weights and tokenizer corpus.")) -> None:
    """Write the model, its tokenizer and chat template to DEST."""
    path = build_tiny_model(dest, seed=seed)
    typer.echo(f"tiny model written to {path}")


if __name__ == "__main__":
    typer.run(main)
