"""Worker signals."""
