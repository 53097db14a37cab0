"""xform.experimental.compilation_cache.compilation_cache: JAX's set_cache_dir/reset_cache."""
import jax
from jax.experimental.compilation_cache import compilation_cache as jcc

import xform
from xform.experimental.compilation_cache import compilation_cache as xcc


def test_set_cache_dir_sets_the_option_as_jax(tmp_path):
    xold = xform.config.read("jax_compilation_cache_dir")
    jold = jax.config.jax_compilation_cache_dir
    try:
        xcc.set_cache_dir(tmp_path)
        jcc.set_cache_dir(str(tmp_path))
        assert xform.config.read("jax_compilation_cache_dir") == str(tmp_path)
        assert jax.config.jax_compilation_cache_dir == str(tmp_path)
        from xform._src.lowering import compilation_cache as impl
        assert impl.cache_dir() == str(tmp_path)
        xcc.reset_cache()
        jcc.reset_cache()
        assert xform.config.read("jax_compilation_cache_dir") == str(tmp_path)
    finally:
        xform.config.update("jax_compilation_cache_dir", xold)
        jax.config.update("jax_compilation_cache_dir", jold)
    public = lambda m: {n for n in dir(m) if not n.startswith("_") and callable(getattr(m, n))}  # noqa: E731
    assert {"set_cache_dir", "reset_cache"} <= public(xcc) & public(jcc)
