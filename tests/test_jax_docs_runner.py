"""The JAX-docs yardstick's runner (tools/jax_docs/run.py): cell extraction, the output
normalisation and the roundoff test, on synthetic pages (JAX's docs are not needed)."""
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "jax_docs_run", Path(__file__).resolve().parents[1] / "tools" / "jax_docs" / "run.py")
run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run)

PAGE = '''# A page

```{code-cell}
x = 1
```

```python
not_a_cell = 1
```

```{code-cell} ipython3
:id: abc
:tags: [raises-exception]

x + 1
```

```{code-cell}
---
tags: [hide-output]
---
%timeit x
print(x)
```
'''


def test_extract_cells_reads_only_code_cells_and_drops_options(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(PAGE)
    assert run.extract_cells(page) == ["x = 1", "\nx + 1", "%timeit x\nprint(x)"]


def test_cells_run_like_a_notebook():
    ns = {}
    assert run._run_cell("x = 2\nprint('hi')\nx * 3", ns) == ("hi\n6\n", None, "")
    assert run._run_cell("x * 3;", ns) == ("", None, "")           # ';' hides the value
    out, exc, msg = run._run_cell("print('a')\n1 / 0", ns)
    assert (out, exc) == ("a\n", "ZeroDivisionError")
    assert run._strip_magics("%timeit x\ny = 1") == ("y = 1", True)
    assert run._strip_magics("y = 1") == ("y = 1", False)


def test_normalisation_hides_addresses_only():
    a = "<function f at 0x7f3d514f87c0>  \n[1. 2.]"
    b = "<function f at 0x7fa1010eb380>\n[1. 2.]"
    assert run.normalise(a) == run.normalise(b)
    assert run.normalise("[1. 2.]") != run.normalise("[1. 3.]")


def test_roundoff_is_a_few_float32_ulps_and_nothing_else():
    assert run.only_roundoff("Array([0.84147096, 0.9], dtype=float32)",
                             "Array([0.841471  , 0.9], dtype=float32)")
    assert not run.only_roundoff("b 0.1964569", "b 0.1965761")      # 6e-4 relative
    assert not run.only_roundoff("dtype=float32 0.5", "dtype=float64 0.5")
    assert not run.only_roundoff("[1, 2]", "[1, 2, 3]")
