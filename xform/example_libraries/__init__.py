"""``xform.example_libraries``: JAX's small reference libraries, ``optimizers`` (the
``(init, update, get_params)`` triple) and ``stax`` (neural-network layers as
``(init_fun, apply_fun)`` pairs), as used by JAX's examples."""
