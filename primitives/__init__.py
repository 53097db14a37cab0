"""The primitive catalogue.  Importing this package registers every rule."""
from primitives import _rules  # noqa: F401  (installs the AD/batching hooks)
from primitives import elementwise  # noqa: F401
