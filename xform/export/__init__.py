"""``xform.export``: staged programs that outlive the process (``jax.export``'s API).

``export(jit(f))(*args)`` traces ``f`` for the given argument shapes (arrays or
``ShapeDtypeStruct``s), lowers it to StableHLO and stores it as a portable
artifact (versioned VHLO bytecode) in an :class:`Exported`, together with its
calling convention: flat argument/result avals, input/output pytrees,
platforms.  ``Exported.serialize()`` writes JAX's FlatBuffer format, so the
bytes are read by ``jax.export.deserialize`` (and an artifact written by
``jax.export`` is read by :func:`deserialize` here); ``Exported.call`` runs it
(eagerly, under ``jit``, under ``grad`` through the exported VJP, under
``vmap`` as a loop over the batch).

Calling convention (JAX's, version 10): the module's public ``main`` takes the
flattened array arguments (after a leading ``i32`` platform index when several
platforms are exported) and returns the flattened results.  A
shape-polymorphic module (dimension variables in ``in_avals``) computes its
dimension variables from the argument shapes itself; calling it specialises
the module to the concrete shapes with jaxlib's shape refinement, which also
checks the exporter's shape assertions.

The package: ``_export.py`` (tracing, lowering and packaging: ``export``),
``_exported.py`` (``Exported``, ``deserialize``, ``call``), ``_serialization.py`` (the
plain data an artifact records) and ``_shape_poly.py`` (symbolic dimensions); the
lowering pieces are ``lowering/export_*.py``.
"""
from __future__ import annotations

from xform.export._shape_poly import (  # noqa: F401
    SymbolicScope, is_symbolic_dim, symbolic_args_specs, symbolic_shape,
)
from xform.export._serialization import (  # noqa: F401
    DisabledSafetyCheck, maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version, register_namedtuple_serialization,
    register_pytree_node_serialization,
)
from xform.export._exported import (  # noqa: F401
    Exported, call, call_exported, deserialize,
)
from xform.export._export import (  # noqa: F401
    default_export_platform, export,
)

__all__ = [
    "export", "deserialize", "Exported", "DisabledSafetyCheck", "symbolic_shape",
    "symbolic_args_specs", "default_export_platform", "call", "call_exported",
    "register_pytree_node_serialization", "register_namedtuple_serialization",
    "minimum_supported_calling_convention_version", "is_symbolic_dim",
    "maximum_supported_calling_convention_version", "SymbolicScope",
]
