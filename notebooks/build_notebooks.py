"""Build (and execute) the research notebooks from the cell lists below.

Why a generator: notebooks are JSON, hard to review and to edit by hand.  The
source of truth is plain Python (one function per notebook at the end of this
file, returning its markdown and code cells); this script turns it into
``.ipynb`` files with nbformat, runs them top to bottom with nbclient and saves
them *with* their outputs, so a code host renders results and plots.

    python notebooks/build_notebooks.py            # build + execute all
    python notebooks/build_notebooks.py 02 04      # only notebooks whose name contains 02 / 04
    python notebooks/build_notebooks.py --no-execute

``execute_notebook`` is also what ``tests/test_notebooks.py`` uses: the kernel is
the *current* interpreter (``sys.executable -m ipykernel_launcher``), never an
installed kernel spec, and it imports the same ``xform`` as the caller.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import sys
import textwrap
import time

HERE = pathlib.Path(__file__).resolve().parent

__all__ = ["execute_notebook", "build", "NOTEBOOKS"]


def _kernel_manager_class():
    """A KernelManager whose kernel spec is ``sys.executable -m ipykernel_launcher``.

    Installed kernel specs (``python3`` from a system Jupyter, or the one a wheel
    ships with ``argv: ["python", ...]``) may point at another interpreter; this
    one cannot."""
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import KernelManager

    class CurrentInterpreterKernelManager(KernelManager):
        @property
        def kernel_spec(self):
            return KernelSpec(argv=[sys.executable, "-m", "ipykernel_launcher", "-f",
                                    "{connection_file}"],
                              display_name=f"Python ({sys.executable})", language="python",
                              resource_dir=str(HERE))

    return CurrentInterpreterKernelManager


def _kernel_env():
    """The caller's environment, plus the directory ``xform`` was imported from on
    PYTHONPATH (a source checkout or site-packages: the kernel sees the same code),
    a headless matplotlib and no hypothesis database writes next to the notebooks."""
    env = dict(os.environ)
    spec = importlib.util.find_spec("xform")
    if spec is not None and spec.origin:
        root = str(pathlib.Path(spec.origin).resolve().parent.parent)
    elif (HERE.parent / "xform" / "__init__.py").exists():   # run from a source checkout
        root = str(HERE.parent)
    else:
        root = None
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in
                                             env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("MPLBACKEND", "Agg")
    return env


def execute_notebook(nb, cwd=HERE, timeout=120):
    """Run ``nb`` (an nbformat NotebookNode) in place, top to bottom, with a
    per-cell ``timeout`` (s).  Raises ``nbclient.exceptions.CellExecutionError``
    naming the cell and traceback when a cell fails."""
    from nbclient import NotebookClient
    km = _kernel_manager_class()(kernel_name="python3")
    client = NotebookClient(nb, km=km, timeout=timeout, allow_errors=False,
                            resources={"metadata": {"path": str(cwd)}})
    client.execute(env=_kernel_env(), cwd=str(cwd))
    return nb


NOTEBOOKS = ("01_quickstart", "02_dispatch_tax", "03_property_testing",
             "04_rematerialization", "05_the_ir")


def make_notebook(cells):
    import nbformat
    from nbformat import v4
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, src in cells:
        nb.cells.append(v4.new_markdown_cell(src) if kind == "md" else v4.new_code_cell(src))
    nbformat.validate(nb)
    return nb


def build(names=(), execute=True, timeout=120):
    import nbformat
    table = _CELLS
    chosen = [n for n in NOTEBOOKS if not names or any(s in n for s in names)]
    for name in chosen:
        nb = make_notebook(table[name]())
        t0 = time.perf_counter()
        if execute:
            execute_notebook(nb, HERE, timeout)
        # stable cell ids, so regenerating gives small diffs
        for i, cell in enumerate(nb.cells):
            cell["id"] = f"{name[:2]}-{i:03d}"
        nbformat.write(nb, HERE / f"{name}.ipynb")
        print(f"{name}.ipynb: {len(nb.cells)} cells"
              + (f", executed in {time.perf_counter() - t0:.1f} s" if execute else ""))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="substrings of notebook names to build")
    ap.add_argument("--no-execute", action="store_true")
    ap.add_argument("--timeout", type=int, default=120, help="per-cell timeout (s)")
    a = ap.parse_args(argv)
    build(a.names, execute=not a.no_execute, timeout=a.timeout)


# ===================================================================== the notebooks
# Each function returns [("md" | "code", source), ...].  Keep every notebook well
# under a minute on 2 CPU cores: tests/test_notebooks.py runs them all.


def md(s):
    return ("md", textwrap.dedent(s).strip("\n"))


def code(s):
    return ("code", textwrap.dedent(s).strip("\n"))

def quickstart():
    return [
        md('''
        # xform quickstart: `grad`, `vmap` and `jit` on a real problem

        xform is a functional array-transformation system with JAX's API: pure
        functions over immutable arrays, transformed by `grad`, `vmap` and `jit`
        (and `jvp`, `vjp`, `linearize`, ...), which compose in any order.  Staged
        programs are lowered to StableHLO and compiled by XLA.

        This notebook trains a small MLP on scikit-learn's *digits* (8x8 images,
        shipped inside scikit-learn: no download), then uses `vmap(grad(...))` for
        per-example gradients and measures what `jit` buys.
        '''),
        code('''
        %matplotlib inline
        import time
        import numpy as np
        import matplotlib.pyplot as plt

        import xform
        import xform.numpy as xnp
        from xform import nn
        print("devices:", xform.devices())
        '''),
        md('''
        ## Arrays are immutable values
        An `Array` has a shape, a dtype and a device.  Updates are functional
        (`x.at[i].set(v)` returns a new array), so nothing a transformation saved can
        be corrupted behind its back.  In Jupyter an Array renders through its
        `_repr_html_`:
        '''),
        code('''
        x = xnp.arange(6.0).reshape(2, 3)
        y = x.at[0, 1].set(10.0)
        print("x unchanged:", x.tolist())
        y
        '''),
        md('''
        ## `grad` and `jvp` on the chapter's golden value
        For $f(x) = x^2 \\sin x$ at $x = 2$ the founding chapter gives $f \\approx 3.637$
        and $f' \\approx 1.973$; reverse mode (`grad`) and forward mode (`jvp`) agree.
        '''),
        code('''
        f = lambda x: x ** 2 * xnp.sin(x)
        value, df_rev = xform.value_and_grad(f)(2.0)
        _, df_fwd = xform.jvp(f, (2.0,), (1.0,))
        print(f"f(2) = {float(value):.3f}   f'(2) reverse = {float(df_rev):.3f}   "
              f"forward = {float(df_fwd):.3f}")
        print("second derivative:", float(xform.grad(xform.grad(f))(2.0)))
        '''),
        md('''
        ## Data and model
        A 64-128-10 MLP with ReLU, softmax cross-entropy.  Parameters are a pytree
        (a list of `(W, b)` tuples): every transformation accepts pytrees.
        '''),
        code('''
        from sklearn.datasets import load_digits

        digits = load_digits()
        X = (digits.data / 16.0).astype(np.float32)
        Y = digits.target.astype(np.int32)
        perm = np.random.default_rng(0).permutation(len(X))
        X, Y = X[perm], Y[perm]
        n_train = 1400
        X_train, Y_train = xnp.asarray(X[:n_train]), xnp.asarray(Y[:n_train])
        X_test, Y_test = xnp.asarray(X[n_train:]), xnp.asarray(Y[n_train:])

        def init_params(sizes, seed=0):
            rng = np.random.default_rng(seed)
            return [(xnp.asarray(rng.normal(0, np.sqrt(2 / m), (m, n)).astype(np.float32)),
                     xnp.zeros(n, xnp.float32)) for m, n in zip(sizes[:-1], sizes[1:])]

        def predict(params, x):
            for W, b in params[:-1]:
                x = nn.relu(x @ W + b)
            W, b = params[-1]
            return x @ W + b

        def loss_fn(params, x, y):
            logp = nn.log_softmax(predict(params, x))
            return -xnp.mean(xnp.sum(logp * nn.one_hot(y, 10), axis=-1))

        def accuracy(params, x, y):
            return float(xnp.mean(xnp.argmax(predict(params, x), axis=-1) == y))

        params = init_params([64, 128, 10])
        print("parameter shapes:", xform.tree_util.tree_map(lambda p: p.shape, params))
        print(f"initial loss {float(loss_fn(params, X_train, Y_train)):.3f}, "
              f"test accuracy {accuracy(params, X_test, Y_test):.3f}")
        '''),
        md('''
        ## Training with `jit(value_and_grad)`
        One SGD step is a pure function `params -> params`; `jit` traces it once
        per input signature and compiles it with XLA.
        '''),
        code('''
        def sgd_step(params, x, y, lr=0.2):
            loss, grads = xform.value_and_grad(loss_fn)(params, x, y)
            params = xform.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
            return params, loss

        step = xform.jit(sgd_step)
        batch = 100
        losses, test_acc = [], []
        t0 = time.perf_counter()
        for epoch in range(20):
            for i in range(0, n_train, batch):
                params, loss = step(params, X_train[i:i + batch], Y_train[i:i + batch])
                losses.append(float(loss))
            test_acc.append(accuracy(params, X_test, Y_test))
        print(f"{len(losses)} steps in {time.perf_counter() - t0:.2f} s; "
              f"final test accuracy {test_acc[-1]:.3f}")
        '''),
        code('''
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.2))
        a1.plot(losses, lw=0.8)
        a1.set_yscale("log"); a1.set_xlabel("step"); a1.set_ylabel("training loss (batch)")
        a1.set_title("loss curve")
        a2.plot(np.arange(1, len(test_acc) + 1), test_acc, "o-")
        a2.set_xlabel("epoch"); a2.set_ylabel("test accuracy"); a2.set_title("held-out digits")
        fig.tight_layout()
        '''),
        md('''
        ## Per-example gradients: `vmap(grad(...))`
        Transformation order is semantic.  `grad` of the *mean* loss gives one
        gradient; `vmap(grad(loss_one))` maps over the batch axis of the data (not
        the parameters: `in_axes=(None, 0, 0)`) and gives one gradient *per
        example*, in one vectorised program, no Python loop.  Their mean is the
        batch gradient.
        '''),
        code('''
        def loss_one(params, x, y):          # one example: x f32[64], y i32[]
            return loss_fn(params, x[None], y[None])

        per_example = xform.jit(xform.vmap(xform.grad(loss_one), in_axes=(None, 0, 0)))
        xb, yb = X_test[:32], Y_test[:32]
        g_each = per_example(params, xb, yb)
        print("per-example grad of W1:", g_each[0][0].shape)

        g_batch = xform.grad(loss_fn)(params, xb, yb)
        mean_each = xform.tree_util.tree_map(lambda g: xnp.mean(g, axis=0), g_each)
        xform.testing.assert_allclose(mean_each, g_batch, atol=1e-5, rtol=1e-4)
        print("mean of per-example gradients == batch gradient: ok")

        # a Python loop as the independent check of one example
        g3 = xform.grad(loss_one)(params, xb[3], yb[3])
        xform.testing.assert_allclose(xform.tree_util.tree_map(lambda g: g[3], g_each), g3,
                                      atol=1e-5, rtol=1e-4)
        norms = np.sqrt(sum(np.sum(np.asarray(g) ** 2, axis=tuple(range(1, g.ndim)))
                            for g in xform.tree_util.tree_leaves(g_each)))
        correct = np.asarray(xnp.argmax(predict(params, xb), -1) == yb)
        plt.figure(figsize=(5, 2.6))
        plt.bar(np.arange(32), norms, color=np.where(correct, "tab:blue", "tab:red"))
        plt.xlabel("example"); plt.ylabel("|grad|"); plt.yscale("log")
        plt.title("per-example gradient norm (red: misclassified)");
        '''),
        md('''
        ## What does `jit` buy?
        Eager execution dispatches every primitive separately from Python (the
        "dispatch tax"); `jit` stages the whole step into one XLA executable.  The
        first call pays for tracing and compiling.  Numbers below are measured on
        whatever machine executed this notebook.
        '''),
        code('''
        def per_call(fn, n=20, rounds=5):
            fn()
            ts = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                for _ in range(n):
                    xform.tree_util.tree_map(lambda a: a.block_until_ready(), fn())
                ts.append((time.perf_counter() - t0) / n)
            return float(np.median(ts))

        xb, yb = X_train[:batch], Y_train[:batch]
        def fresh_step(params, x, y):        # a new function: a cold jit cache
            return sgd_step(params, x, y)
        t0 = time.perf_counter()
        xform.jit(fresh_step).lower(params, xb, yb).compile()
        t_compile = time.perf_counter() - t0

        t_eager = per_call(lambda: sgd_step(params, xb, yb))
        t_jit = per_call(lambda: step(params, xb, yb))
        n_ops = xform.profile.count_ops(xform.make_jaxpr(sgd_step)(params, xb, yb))
        print(f"staged step: {n_ops} primitive operations")
        print(f"eager step   {t_eager * 1e6:9.1f} us")
        print(f"jit step     {t_jit * 1e6:9.1f} us   -> {t_eager / t_jit:.1f}x faster")
        print(f"compile      {t_compile * 1e3:9.1f} ms   -> pays for itself after "
              f"{xform.profile.break_even(t_compile, t_eager, t_jit):.0f} steps")
        '''),
        md('''
        The staged program is an ordinary value you can print (notebook 05 reads it in
        detail).  Here is the loss; in Jupyter it renders through `_repr_html_`:
        '''),
        code('''
        xform.make_jaxpr(loss_fn)(init_params([4, 3, 2]), xnp.ones((2, 4)), xnp.zeros(2, xnp.int32))
        '''),
    ]

#@@CELLS@@

_CELLS = {name: globals()[name[3:]] for name in NOTEBOOKS if name[3:] in globals()}


if __name__ == "__main__":
    main()
