"""``jax._src.state.types`` under the alias."""


class AbstractRef:
    """The abstract value of a mutable array reference.  xform has no references, so
    no xform value or abstract value is an ``AbstractRef``."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("mutable array references (jax.Ref) are not "
                                  "implemented by xform")
