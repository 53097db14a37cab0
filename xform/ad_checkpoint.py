"""``xform.ad_checkpoint``: JAX's module of the same name (checkpointing tools)."""
from xform._remat import (checkpoint, checkpoint_name, checkpoint_policies,  # noqa: F401
                               print_saved_residuals, remat, saved_residuals)
from xform._remat import (everything_saveable, nothing_saveable,  # noqa: F401
                               dots_saveable, checkpoint_dots,
                               dots_with_no_batch_dims_saveable, save_only_these_names,
                               save_any_names_but_these, save_anything_except_these_names,
                               save_from_both_policies)

from xform._src.interpreters.jaxpr_transforms import (  # noqa: F401,E402
    Offloadable, Recompute, Saveable)

__all__ = ["Offloadable", "Recompute", "Saveable", "checkpoint", "checkpoint_name", "checkpoint_policies", "print_saved_residuals",
           "remat", "saved_residuals"]
