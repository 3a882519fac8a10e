"""rm_hub."""
