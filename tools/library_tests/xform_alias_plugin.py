"""pytest plugin (``-p xform_alias_plugin``): alias ``import jax`` to xform before any
test module or conftest imports a library."""
import xform.compat

xform.compat.alias_jax()
