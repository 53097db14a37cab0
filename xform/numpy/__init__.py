"""xform.numpy (being written)."""
