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
import tempfile
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
    env.setdefault("HYPOTHESIS_STORAGE_DIRECTORY",
                   os.path.join(tempfile.gettempdir(), "xform-notebooks-hypothesis"))
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
NOTEBOOKS += ("16_mixed_precision",)


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
        from xform import nn, random
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
        ## `grad` and `jvp` on a value worked by hand
        For $f(x) = x^2 \\sin x$ at $x = 2$: $f = 4 \\sin 2 \\approx 3.637$ and
        $f' = 2x \\sin x + x^2 \\cos x = 4 \\sin 2 + 4 \\cos 2 \\approx 1.973$; reverse mode
        (`grad`) and forward mode (`jvp`) agree.
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

        def init_params(sizes, key):
            # xform.random: JAX's counter-based PRNG, the same bits as jax.random
            keys = random.split(key, len(sizes) - 1)
            return [(random.normal(k, (m, n)) * np.sqrt(2 / m), xnp.zeros(n, xnp.float32))
                    for k, m, n in zip(keys, sizes[:-1], sizes[1:])]

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

        key = random.key(0)
        key, init_key = random.split(key)
        params = init_params([64, 128, 10], init_key)
        print("parameter shapes:", xform.tree_util.tree_map(lambda p: p.shape, params))
        print(f"initial loss {float(loss_fn(params, X_train, Y_train)):.3f}, "
              f"test accuracy {accuracy(params, X_test, Y_test):.3f}")
        '''),
        md('''
        ## Training with `jit(value_and_grad)`
        One SGD step is a pure function `params -> params`; `jit` traces it once
        per input signature and compiles it with XLA.  Randomness is explicit:
        a key is split into a new key to carry forward and a subkey to consume
        (here: one permutation of the training set per epoch), never reused.
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
            # split the key each epoch: a fresh, reproducible shuffle of the training set
            key, shuffle_key = random.split(key)
            order = random.permutation(shuffle_key, n_train)
            Xs, Ys = X_train[order], Y_train[order]
            for i in range(0, n_train, batch):
                params, loss = step(params, Xs[i:i + batch], Ys[i:i + batch])
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
        xform.make_jaxpr(loss_fn)(init_params([4, 3, 10], random.key(1)), xnp.ones((2, 4)),
                                  xnp.zeros(2, xnp.int32))
        '''),
    ]

def dispatch_tax():
    return [
        md('''
        # The dispatch tax: eager vs `jit`, measured

        A simple model of eager execution has it pay a fixed host cost per
        operation (Python dispatch, type checks, kernel launch) on top of the
        device work, and gives two laws:

        * **overhead ratio** $= N_{ops}\\, t_{dispatch} / (T_{compute} + T_{memory})$;
          above 1 a workload is overhead-bound and staging pays most.
        * **break-even** $N = T_{compile} / (T_{eager} - T_{compiled})$: how many
          calls before compiling has paid for itself.

        This notebook measures both for xform on the machine that executed it.  The
        model's worked figures are *illustrative* (a modelled A100 and a 15 µs tax
        per op, typical of a GPU framework's eager mode); ours are printed beside
        them for context, never as pass/fail thresholds.  Timings on a shared
        2-core CI VM are noisy: read trends, not digits.
        '''),
        code('''
        %matplotlib inline
        import itertools, time
        import numpy as np
        import matplotlib.pyplot as plt

        import xform
        import xform.numpy as xnp
        from xform import nn, profile

        def block(out):
            for leaf in xform.tree_util.tree_leaves(out):
                leaf.block_until_ready()
            return out

        def per_call(fn, n=20, rounds=5):
            """Best over rounds of the mean time of n blocked calls (s): on a shared
            machine the minimum is the least noisy estimate of the cost itself."""
            block(fn())
            ts = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                for _ in range(n):
                    block(fn())
                ts.append((time.perf_counter() - t0) / n)
            return float(np.min(ts))

        _fresh = itertools.count()
        def compile_time(f, *args):
            """Trace + lower + XLA-compile a fresh copy of f (no cache can hide it)."""
            def g(*a):
                return f(*a)
            g.__name__ = f"fresh_{next(_fresh)}"
            t0 = time.perf_counter()
            compiled = xform.jit(g).lower(*args).compile()
            return time.perf_counter() - t0, compiled

        def cost(compiled):
            c = compiled.cost_analysis()
            return float(c.get("flops", 0.0)), float(c.get("bytes accessed", 0.0))
        '''),
        md('''
        ## The tax on one op
        `profile.measure_dispatch` times `x + x` on a one-element array, where the
        work is negligible.  xform has two eager paths: arrays on the host run the
        NumPy reference kernels; arrays placed on an XLA device (`device_put`) run
        one cached single-primitive executable per op.
        '''),
        code('''
        t_host = profile.measure_dispatch()
        t_dev = profile.measure_dispatch(device=True)
        print(f"eager tax per op, host arrays (NumPy kernels):   {t_host * 1e6:6.2f} us")
        print(f"eager tax per op, device arrays (XLA per op):    {t_dev * 1e6:6.2f} us")
        print("the model: ~15 us (10 us Python + 5 us launch); elsewhere 2-5 us")
        '''),
        md('''
        ## Chains of 1..256 elementwise ops
        `x -> x * 0.5 + 0.25`, repeated, on a 256-element float32 array (1 KB).
        Eager cost grows linearly with the number of ops; the compiled program is
        one fused loop, so its per-call cost barely moves.  The `jit` column
        passes a device-resident argument (`device_put`); a host NumPy-backed
        argument adds a host-to-device copy per call (measured below the table).
        '''),
        code('''
        def chain(n_ops):
            def f(x):
                for i in range(n_ops):
                    x = x * 0.5 if i % 2 == 0 else x + 0.25
                return x
            return f

        x_host = xnp.asarray(np.linspace(-1, 1, 256, dtype=np.float32))
        x_dev = xform.device_put(np.linspace(-1, 1, 256, dtype=np.float32))
        rows = []
        for n_ops in [1, 2, 4, 8, 16, 32, 64, 128, 256]:
            f = chain(n_ops)
            t_compile, compiled = compile_time(f, x_host)
            jf = xform.jit(f)
            iters = max(2, 200 // n_ops)
            rows.append(dict(
                n_ops=n_ops,
                eager_host=per_call(lambda: f(x_host), iters),
                eager_dev=per_call(lambda: f(x_dev), iters),
                jit=per_call(lambda: jf(x_dev), 50),
                compile=t_compile, flops=cost(compiled)[0], bytes=cost(compiled)[1]))
        for r in rows:
            r["break_even"] = profile.break_even(r["compile"], r["eager_host"], r["jit"])
            t_c, t_m = profile.device_time(r["flops"], r["bytes"], profile.CPU)
            r["overhead_ratio"] = profile.overhead_ratio(r["n_ops"], t_host, t_c, t_m)

        print(f"{'ops':>4} {'eager host':>11} {'eager dev':>10} {'jit':>9} {'compile':>9}"
              f" {'break-even N':>13} {'XLA bytes':>10} {'ovh ratio':>10}")
        for r in rows:
            print(f"{r['n_ops']:>4} {r['eager_host']*1e6:>9.1f}us {r['eager_dev']*1e6:>8.1f}us"
                  f" {r['jit']*1e6:>7.1f}us {r['compile']*1e3:>7.1f}ms {r['break_even']:>13,.0f}"
                  f" {r['bytes']:>10,.0f} {r['overhead_ratio']:>10,.0f}")
        j1 = xform.jit(chain(1))
        print(f"\\njit, 1 op: device argument {per_call(lambda: j1(x_dev), 100) * 1e6:.1f} us, "
              f"host argument {per_call(lambda: j1(x_host), 100) * 1e6:.1f} us")
        '''),
        code('''
        n = np.array([r["n_ops"] for r in rows])
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.6))
        a1.loglog(n, [r["eager_host"] * 1e6 for r in rows], "o-", label="eager (host, NumPy)")
        a1.loglog(n, [r["eager_dev"] * 1e6 for r in rows], "s-", label="eager (device, XLA per op)")
        a1.loglog(n, [r["jit"] * 1e6 for r in rows], "^-", label="jit (one executable)")
        a1.loglog(n, n * t_host * 1e6, "k:", label="N x measured t_dispatch")
        a1.loglog(n, n * 15, "--", color="gray", label="N x 15 us (the model)")
        a1.set_xlabel("elementwise ops in the chain"); a1.set_ylabel("time per call (us)")
        a1.legend(fontsize=8); a1.set_title("per-call time")
        be = [r["break_even"] for r in rows]
        a2.semilogx(n, be, "o-")
        a2.set_xlabel("elementwise ops in the chain")
        a2.set_ylabel("calls to amortise compile")
        a2.set_yscale("log"); a2.set_title("break-even N = T_compile / (T_eager - T_jit)")
        fig.tight_layout()
        '''),
        md('''
        **Fusion.** XLA's cost analysis of the compiled chain reports the *same*
        bytes accessed for 1 op and for 256 ops: the chain is one fused loop that
        reads the input once and writes the output once ($2Nb$), where eager pays
        $2kNb$ for $k$ ops.  Take `relu(x + b)`: eager is 2
        dispatches and ~4Nb bytes, the compiled program 1 fusion.
        '''),
        code('''
        xb = xnp.ones((1024, 256), xnp.float32)
        b = xnp.ones((256,), xnp.float32)
        _, fused = compile_time(lambda x, b: nn.relu(x + b), xb, b)
        _, add_alone = compile_time(lambda x, b: x + b, xb, b)
        _, relu_alone = compile_time(lambda x: nn.relu(x), xb)
        print(f"eager (2 kernels): bytes = {cost(add_alone)[1] + cost(relu_alone)[1]:>12,.0f}")
        print(f"fused (1 kernel):  bytes = {cost(fused)[1]:>12,.0f}")
        print("\\n".join(l for l in fused.as_text().splitlines() if "fusion(" in l and "ROOT" in l))
        '''),
        md('''
        ## A small MLP, the model's worked figures side by side
        x f32[32,784], W1 f32[784,256], W2 f32[256,10].  We compile each op alone
        and read XLA's cost analysis, then run `profile.dispatch_report` on the
        forward pass and on a full training step (`value_and_grad` + SGD).
        '''),
        code('''
        rng = np.random.default_rng(0)
        x = xnp.asarray(rng.standard_normal((32, 784), dtype=np.float32))
        W1 = xnp.asarray(rng.standard_normal((784, 256), dtype=np.float32) * 0.03)
        W2 = xnp.asarray(rng.standard_normal((256, 10), dtype=np.float32) * 0.06)
        h = nn.relu(x @ W1)
        model = {"x@W1": (12.8e6, 0.9e6, 13.7), "ReLU": (8.2e3, 65.5e3, 0.125),
                 "h@W2": (163.8e3, 44.3e3, 3.7)}
        ours = {"x@W1": cost(compile_time(lambda a, b: a @ b, x, W1)[1]),
                "ReLU": cost(compile_time(nn.relu, x @ W1)[1]),
                "h@W2": cost(compile_time(lambda a, b: a @ b, h, W2)[1])}
        print(f"{'op':6} {'model FLOP':>13} {'ours':>11} {'model bytes':>14} {'ours':>10}"
              f" {'model AI':>11} {'ours':>6}")
        for k, (fl, by, ai) in model.items():
            f2, b2 = ours[k]
            print(f"{k:6} {fl:>13,.0f} {f2:>11,.0f} {by:>14,.0f} {b2:>10,.0f} {ai:>11.3f} "
                  f"{f2 / b2:>6.3f}")
        '''),
        md('''
        (The model counts a ReLU as one FLOP per element; XLA's cost analysis
        counts its compare and select, two per element, hence twice the AI.  Small
        byte differences come from what each count includes.)
        '''),
        code('''
        def forward(W1, W2, x):
            return nn.relu(x @ W1) @ W2

        def train_step(W1, W2, x, y):
            def loss(W1, W2):
                return -xnp.mean(xnp.sum(nn.log_softmax(forward(W1, W2, x))
                                         * nn.one_hot(y, 10), axis=-1))
            l, (g1, g2) = xform.value_and_grad(loss, argnums=(0, 1))(W1, W2)
            return W1 - 0.1 * g1, W2 - 0.1 * g2, l

        y = xnp.asarray(rng.integers(0, 10, 32).astype(np.int32))
        reports = {
            "forward, CPU model": profile.dispatch_report(forward, W1, W2, x, n_iter=20,
                                                          t_dispatch=t_host),
            "train step, CPU model": profile.dispatch_report(train_step, W1, W2, x, y,
                                                             n_iter=10, t_dispatch=t_host),
        }
        print(reports["train step, CPU model"])
        '''),
        md('''
        The same measured tax against a modelled A100's device time (the model's
        setting: the device is so fast that almost all of an eager step is tax):
        '''),
        code('''
        step_r = reports["train step, CPU model"]
        t_c, t_m = profile.device_time(step_r.flops, step_r.bytes_accessed, profile.A100)
        table = [
            ("per-op tax (us)", "15 (model)", f"{t_host * 1e6:.1f} host / {t_dev * 1e6:.1f} device"),
            ("tax share, 1 us op", f"{15 / 16:.0%}", f"{t_host / (t_host + 1e-6):.0%}"),
            ("tax share, 100 us matmul", f"{15 / 115:.0%}", f"{t_host / (t_host + 100e-6):.0%}"),
            ("MLP step: ops", "6", f"{step_r.n_ops} (staged equations)"),
            ("MLP step: FLOP", "~39 M", f"{step_r.flops / 1e6:.1f} M (XLA)"),
            ("MLP step: bytes", "~4.2 MB", f"{step_r.bytes_accessed / 1e6:.1f} MB (XLA, fused)"),
            ("overhead ratio (A100 model)",
             f"{profile.overhead_ratio(6, 15e-6, 2.6e-6, 0):.1f}",
             f"{profile.overhead_ratio(step_r.n_ops, t_host, t_c, t_m):.1f}"),
            ("overhead ratio (CPU model)", "-", f"{step_r.overhead_ratio:.1f}"),
            ("eager step / jit step", "-", f"{step_r.t_eager / step_r.t_jit:.1f}x"),
            ("break-even N", "-", f"{step_r.break_even:,.0f} steps"),
        ]
        print(f"{'quantity':30} {'model':>12}   ours (measured on this machine)")
        for k, a, b in table:
            print(f"{k:30} {a:>12}   {b}")
        '''),
        md('''
        ## A roofline from XLA's cost analysis
        For each kernel: arithmetic intensity = FLOPs / bytes accessed (XLA's
        counts), achieved FLOP/s = FLOPs / measured `jit` time.  The roof is
        `min(peak, AI x bandwidth)` with peak and bandwidth measured on this host by
        `profile.calibrate_cpu()` (NumPy matmul rate, large-copy bandwidth).
        Elementwise kernels sit far left (memory- or overhead-bound); matmuls move
        right and up as they grow.  Small kernels fall well below the roof: a
        fixed per-call cost (the `jit` dispatch tax) dominates them.  The roof is
        an estimate: XLA's own matmul can beat the NumPy calibration run, so a
        point above the solid line means the calibration was pessimistic, not
        that the laws of physics bent.
        '''),
        code('''
        host = profile.calibrate_cpu()
        print(f"calibrated: peak {host.peak_flops / 1e9:.1f} GFLOP/s, "
              f"bandwidth {host.bandwidth / 1e9:.1f} GB/s")
        points = []
        for n in [1 << 10, 1 << 14, 1 << 18, 1 << 20]:
            a = xnp.ones((n,), xnp.float32)
            _, c = compile_time(lambda a: a * a + a, a)
            jf = xform.jit(lambda a: a * a + a)
            points.append(("elementwise", n, *cost(c), per_call(lambda: jf(a), 20)))
        for n in [16, 32, 64, 128, 256, 512]:
            a = xnp.asarray(rng.standard_normal((n, n), dtype=np.float32))
            _, c = compile_time(lambda a, b: a @ b, a, a)
            jf = xform.jit(lambda a, b: a @ b)
            points.append(("matmul", n, *cost(c), per_call(lambda: jf(a, a), 10 if n < 512 else 3)))
        for name, n, fl, by, t in points:
            print(f"{name:12} n={n:<8} AI={fl / by:7.3f} FLOP/B  achieved {fl / t / 1e9:8.3f} GFLOP/s"
                  f"  ({t * 1e6:8.1f} us)")
        '''),
        code('''
        ai = np.logspace(-2, 3, 100)
        plt.figure(figsize=(6.5, 4))
        plt.loglog(ai, np.minimum(host.peak_flops, ai * host.bandwidth) / 1e9, "k-",
                   label="roof (calibrated on this host)")
        plt.loglog(ai, np.minimum(profile.CPU.peak_flops, ai * profile.CPU.bandwidth) / 1e9,
                   "k:", label="roof (profile.CPU model)")
        for kind, marker in [("elementwise", "o"), ("matmul", "s")]:
            pts = [p for p in points if p[0] == kind]
            plt.loglog([p[2] / p[3] for p in pts], [p[2] / p[4] / 1e9 for p in pts], marker + "-",
                       label=kind)
            for p in pts:
                plt.annotate(str(p[1]), (p[2] / p[3], p[2] / p[4] / 1e9), fontsize=7,
                             xytext=(3, -8), textcoords="offset points")
        plt.xlabel("arithmetic intensity (FLOP / byte, XLA cost analysis)")
        plt.ylabel("achieved GFLOP/s (measured)")
        plt.title("roofline: jit-compiled kernels on this host")
        plt.legend(fontsize=8);
        '''),
        md('''
        ## Reading the numbers
        * Eager per-op cost is a few microseconds on a CPU host (host arrays run
          NumPy kernels, so there is no device launch), below the model's 15 µs,
          but on tiny arrays it is still essentially all overhead: the
          overhead ratio of a chain is in the tens to thousands.
        * `jit` collapses the chain into one fused kernel, so its cost is nearly
          flat in the number of ops, but each call still pays a fixed dispatch
          (microseconds to tens of microseconds), and compiling costs tens to
          hundreds of milliseconds: short chains never break even, long ones do
          after tens to hundreds of calls.
        * The fallacy "compilation cost is negligible" is visible in the
          break-even column: while iterating on code, staying eager is the right
          default.
        '''),
    ]

def property_testing():
    return [
        md('''
        # Testing transformed code: `xform.testing` and hypothesis

        A trustworthy compiler stack has a *reference* implementation, a *production*
        implementation, and a *verifier* binding them.  In xform the NumPy
        reference kernels are the specification, XLA is production, and
        `xform.testing` gives users the same tools the project tests itself with:

        * `check_grads`: AD against central finite differences, forward and
          reverse, recursively to higher order;
        * `verify`: the staged program run by the NumPy reference interpreter
          and by XLA, compared, with the first diverging equation named;
        * `strategies`: hypothesis strategies for arrays and for whole
          *stacks of transformations* (`jit∘vmap∘grad`, ...).
        '''),
        code('''
        import collections
        import numpy as np
        from hypothesis import given, settings, strategies as st, HealthCheck

        import xform
        import xform.numpy as xnp
        from xform.testing import assert_allclose, check_grads, verify
        from xform.testing import strategies as xst
        '''),
        md('''
        ## `check_grads` on a user function
        A numerically careful softplus.  `order=2` also checks the derivative of the
        derivative (JVP of JVP, VJP of VJP) against finite differences of the
        first derivative.
        '''),
        code('''
        def softplus(x):
            return xnp.maximum(x, 0.0) + xnp.log1p(xnp.exp(-xnp.abs(x)))

        x = xnp.asarray([-3.0, -0.5, 0.7, 4.0])
        check_grads(softplus, (x,), order=2, modes=("fwd", "rev"))
        print("softplus: first and second derivatives agree with finite differences")
        '''),
        md('''
        ## Catching a wrong `custom_jvp` rule
        Custom rules are where AD bugs live: the system trusts them.  Here the
        derivative of softplus is written as `sigmoid(-x)` instead of `sigmoid(x)`,
        a sign slip that a unit test at `x = 0` (where both are 0.5) would miss.
        '''),
        code('''
        @xform.custom_jvp
        def softplus_custom(x):
            return softplus(x)

        @softplus_custom.defjvp
        def _softplus_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return softplus_custom(x), t * xform.nn.sigmoid(-x)      # BUG: should be sigmoid(x)

        print("at x = 0 the bug is invisible:", float(xform.grad(softplus_custom)(0.0)))
        try:
            check_grads(softplus_custom, (x,), order=1)
        except AssertionError as e:
            print("check_grads caught it:\\n ", e)
        '''),
        code('''
        @softplus_custom.defjvp                                   # the fixed rule
        def _softplus_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return softplus_custom(x), t * xform.nn.sigmoid(x)

        check_grads(softplus_custom, (x,), order=2)
        print("fixed rule passes to second order")
        '''),
        md('''
        ## `verify`: reference interpreter vs XLA, equation by equation
        `verify(f, *args)` stages `f`, evaluates the program with the NumPy
        reference kernels and with the compiled XLA executable, and compares
        within the per-dtype tolerance.  The report renders as text:
        '''),
        code('''
        def attention_scores(q, k):
            s = q @ k.T / np.sqrt(q.shape[-1])
            return xform.nn.softmax(s, axis=-1)

        rng = np.random.default_rng(0)
        q = xnp.asarray(rng.standard_normal((8, 16), dtype=np.float32))
        k = xnp.asarray(rng.standard_normal((8, 16), dtype=np.float32))
        report = verify(attention_scores, q, k)
        print(report)
        '''),
        md('''
        With zero tolerance the two implementations are not bit-identical
        (different `tanh`/`exp` approximations and summation orders), and the
        report localises the first equation whose *compiled* result diverges on
        the reference inputs, which is how a wrong lowering is found in a large
        program.  (Cross-implementation agreement is within documented tolerances,
        never bit for bit.)
        '''),
        code('''
        x1k = xnp.asarray(rng.standard_normal(1024, dtype=np.float32))
        r0 = verify(lambda x: xnp.sum(xnp.tanh(x) * xnp.exp(x)), x1k, rtol=0, atol=0,
                    raise_on_failure=False)
        print(r0)
        print("\\nfirst divergence:", r0.first_divergence)
        '''),
        md('''
        ## Properties with hypothesis, run inline
        A `@given` function is an ordinary callable: calling it runs the search.
        `xst.transforms()` draws a stack such as `jit∘vmap∘grad`; `stack(f)`
        applies it and `stack.reference(f)` applies the same stack without `jit`,
        so the property is "staging and compiling never changes the answer, under
        any composition".  We record which stacks were tried.  (`derandomize=True`
        keeps the notebook's output reproducible; in a test suite leave it off.)
        '''),
        code('''
        seen = collections.Counter()

        @settings(max_examples=30, deadline=None, database=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow])
        @given(xst.arrays(shape=xst.shapes(min_dims=1, max_dims=2, min_side=1, max_side=3),
                          min_value=-3, max_value=3),
               xst.transforms(min_depth=1, max_depth=3))
        def jit_is_transparent(x, stack):
            seen[repr(stack)] += 1
            assert_allclose(stack(softplus_custom)(x), stack.reference(softplus_custom)(x),
                            atol=1e-5, rtol=1e-5)

        jit_is_transparent()
        print(f"{sum(seen.values())} examples passed; stacks tried:")
        print(", ".join(f"{k} x{v}" for k, v in seen.most_common()))
        '''),
        md('''
        A property can also compare against mathematics rather than against
        ourselves: for any input, the gradient of the (fixed) `softplus_custom` is
        `sigmoid` and lies in (0, 1).  And when a property is false, hypothesis
        finds and *shrinks* a counterexample.  A naive `logsumexp` (no max
        subtraction) overflows; the property "logsumexp(x) >= max(x) and is
        finite" catches it:
        '''),
        code('''
        @settings(max_examples=40, deadline=None, database=None, derandomize=True)
        @given(xst.arrays(shape=(4,), min_value=-20, max_value=20))
        def grad_is_sigmoid(x):
            g = xform.vmap(xform.grad(softplus_custom))(x)
            assert_allclose(g, 1 / (1 + np.exp(-np.asarray(x, np.float64))), atol=1e-6, rtol=1e-5)
            assert bool(xnp.all((g >= 0) & (g <= 1)))

        grad_is_sigmoid()
        print("grad(softplus_custom) == sigmoid on 40 random inputs")

        def naive_logsumexp(x):
            return xnp.log(xnp.sum(xnp.exp(x)))

        @settings(max_examples=200, deadline=None, database=None, derandomize=True)
        @given(xst.arrays(shape=(3,), min_value=-200, max_value=200))
        def logsumexp_is_sane(x):
            y = naive_logsumexp(x)
            assert bool(xnp.isfinite(y)) and float(y) >= float(xnp.max(x)) - 1e-4

        try:
            with np.errstate(over="ignore"):      # the overflow is the bug we are hunting
                logsumexp_is_sane()
        except AssertionError as e:
            print("hypothesis found and shrank a counterexample:")
            print("\\n".join(getattr(e, "__notes__", [])))
        '''),
    ]

def rematerialization():
    return [
        md('''
        # Rematerialization: memory saved vs compute added

        Reverse mode keeps every intermediate the backward pass needs alive from
        the forward pass until it is consumed, so activation memory grows with
        depth.  `xform.checkpoint` (a.k.a. `remat`) marks a function whose
        intermediates are *recomputed* in the backward pass instead of saved; a
        *policy* decides which intermediates may still be saved.  The usual rule
        of thumb: ~33 % more compute for O(√L) instead of O(L) activation memory.

        Everything here is measured on a deep MLP: what `vjp` saves (count and
        bytes, from `saved_residuals` / the linearized program), how many
        equations the backward program gains, and how long a compiled gradient
        step takes.
        '''),
        code('''
        %matplotlib inline
        import time
        import numpy as np
        import matplotlib.pyplot as plt

        import xform
        import xform.numpy as xnp
        from xform.ad_checkpoint import checkpoint_name, print_saved_residuals, saved_residuals
        from xform.profile import count_ops
        from xform._src.interpreters import ad

        cp = xform.checkpoint_policies
        L, D, H, B = 8, 128, 256, 256             # 8 residual blocks 128 -> 256 -> 128, batch 256
        rng = np.random.default_rng(0)
        init = lambda m, n: xnp.asarray(rng.normal(0, 1 / np.sqrt(m), (m, n)).astype(np.float32))
        Ws = [(init(D, H), init(H, D)) for _ in range(L)]
        x = xnp.asarray(rng.standard_normal((B, D), dtype=np.float32))

        def layer(W, h):
            W1, W2 = W
            z = h @ W1                               # f32[B,H]  a dot
            a = checkpoint_name(xnp.tanh(z), "act")  # f32[B,H]  named for policies
            return h + a @ W2                        # f32[B,D]  residual block

        def make_loss(policy=None, remat=True):
            f = xform.checkpoint(layer, policy=policy) if remat else layer
            def loss(Ws, x):
                h = x
                for W in Ws:
                    h = f(W, h)
                return xnp.mean(h ** 2)
            return loss
        print(f"per block: h f32[{B},{D}] = {B * D * 4 / 1024:.0f} KiB, z and tanh(z) "
              f"f32[{B},{H}] = {B * H * 4 / 1024:.0f} KiB each; "
              f"weights {L} x 2 x {D * H * 4 / 1024:.0f} KiB")
        '''),
        md('''
        ## What does each policy save?
        `print_saved_residuals` lists every residual with its type and origin.
        Without remat, each block saves its input `h` (for `dW1`), `tanh(z)` (for
        `dW2`) and the `tanh` derivative; the weights are saved too but cost
        nothing extra (they are arguments, alive anyway).  One block, three
        policies:
        '''),
        code('''
        for title, loss in [("no checkpoint", make_loss(remat=False)),
                            ("checkpoint(policy=dots_saveable)", make_loss(cp.dots_saveable)),
                            ("checkpoint(policy=nothing_saveable)", make_loss(cp.nothing_saveable))]:
            print(f"-- {title}")
            print_saved_residuals(loss, Ws[:1], x)
        '''),
        code('''
        policies = {
            "no remat": make_loss(remat=False),
            "everything_saveable": make_loss(cp.everything_saveable),
            "dots_saveable": make_loss(cp.dots_saveable),
            "save_only_these_names('act')": make_loss(cp.save_only_these_names("act")),
            "nothing_saveable": make_loss(cp.nothing_saveable),
        }

        def grad_times(losses, n=4, rounds=6):
            """Best time per compiled grad call for each loss, measured round-robin
            (interleaved) so that machine load drifts hit every variant alike."""
            gs = {k: xform.jit(xform.grad(f)) for k, f in losses.items()}
            block = lambda out: xform.tree_util.tree_map(lambda a: a.block_until_ready(), out)
            for g in gs.values():
                block(g(Ws, x))                    # compile outside the timing
            best = dict.fromkeys(gs, np.inf)
            for _ in range(rounds):
                for k, g in gs.items():
                    t0 = time.perf_counter()
                    for _ in range(n):
                        block(g(Ws, x))
                    best[k] = min(best[k], (time.perf_counter() - t0) / n)
            return best

        def residual_bytes(loss):
            """Bytes held by the linearized program's residuals (weights included)."""
            leaves, tree = xform.tree_util.tree_flatten((Ws, x))
            flat = lambda *a: [loss(*xform.tree_util.tree_unflatten(tree, a))]
            return ad.linearize_flat(flat, leaves)[1].residual_bytes

        stats = {}
        times = grad_times(policies)
        for name, loss in policies.items():
            res = saved_residuals(loss, Ws, x)
            act = [a for a, src in res if "from the argument" not in src]
            stats[name] = dict(
                n_res=len(res), n_act=len(act),
                act_bytes=sum(a.size * a.dtype.itemsize for a in act),
                all_bytes=residual_bytes(loss),
                eqns=count_ops(xform.make_jaxpr(xform.grad(loss))(Ws, x)),
                t=times[name])
        base = stats["no remat"]
        print(f"{'policy':30} {'residuals':>9} {'activ.':>6} {'activ. KiB':>10} {'all KiB':>8}"
              f" {'grad eqns':>9} {'grad time':>10}")
        for name, s in stats.items():
            print(f"{name:30} {s['n_res']:>9} {s['n_act']:>6} {s['act_bytes'] / 1024:>10,.0f}"
                  f" {s['all_bytes'] / 1024:>8,.0f} {s['eqns']:>9} {s['t'] * 1e3:>8.2f}ms")
        '''),
        md('''
        "grad eqns" counts the equations of the whole gradient program
        (`make_jaxpr(grad(loss))`, recursively into checkpoint bodies), so the
        growth over "no remat" is the recomputation staged into the backward
        pass.  Time is one compiled `jit(grad(loss))` call (best of 6 interleaved
        rounds; still noisy on a shared machine).  Note the
        asymmetry: XLA is free to re-fuse or CSE across the recomputation, so
        fewer saved bytes need not mean proportionally more time.
        '''),
        code('''
        names = list(stats)
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
        vals = [[stats[n]["act_bytes"] / 1024 for n in names],
                [100 * (stats[n]["eqns"] / base["eqns"] - 1) for n in names],
                [100 * (stats[n]["t"] / base["t"] - 1) for n in names]]
        titles = ["saved activations (KiB)", "extra equations in grad program (%)",
                  "extra time per compiled grad step (%)"]
        for ax, v, t in zip(axes, vals, titles):
            ax.barh(range(len(names)), v, color="tab:blue")
            ax.set_yticks(range(len(names)), names if ax is axes[0] else [""] * len(names))
            ax.set_title(t, fontsize=10); ax.axvline(0, color="k", lw=0.5)
            ax.invert_yaxis()
        fig.tight_layout()
        '''),
        md('''
        ## Segments: the √L trade-off
        Checkpointing every block saves only block inputs (O(L) tensors).
        Classic rematerialization checkpoints *segments* of k layers: only segment
        boundaries are saved (L/k tensors), and the backward pass recomputes one
        segment at a time, holding k layers' intermediates at once; the peak is
        minimised near k ≈ √L.  Below: residuals saved at the boundaries for
        segment sizes k = 1..L (the transient of the recomputed segment is
        modelled as what "no remat" saves per block, times k).
        '''),
        code('''
        def segmented_loss(k):
            def segment(Ws_seg, h):
                for W in Ws_seg:
                    h = layer(W, h)
                return h
            seg = xform.checkpoint(segment, policy=cp.nothing_saveable)
            def loss(Ws, x):
                h = x
                for i in range(0, L, k):
                    h = seg(Ws[i:i + k], h)
                return xnp.mean(h ** 2)
            return loss

        per_block = base["act_bytes"] / L         # bytes saved per block without remat
        seg_rows = []
        seg_losses = {k: segmented_loss(k) for k in [1, 2, 4, 8]}
        seg_t = grad_times({**seg_losses, "no remat": policies["no remat"]})
        for k, loss in seg_losses.items():
            res = [a for a, s in saved_residuals(loss, Ws, x) if "from the argument" not in s]
            saved = sum(a.size * a.dtype.itemsize for a in res)
            peak = saved + per_block * k                  # + one segment recomputed
            eqns = count_ops(xform.make_jaxpr(xform.grad(loss))(Ws, x))
            seg_rows.append((k, len(res), saved, peak, eqns, seg_t[k] / seg_t["no remat"] - 1))
            print(f"k={k:>2}: {len(res):>2} boundary residuals, {saved / 1024:6.0f} KiB saved, "
                  f"modelled peak {peak / 1024:6.0f} KiB, grad eqns {eqns}, "
                  f"time {seg_t[k] * 1e3:.2f} ms")
        print(f"no remat: {base['act_bytes'] / 1024:.0f} KiB saved, grad eqns {base['eqns']}, "
              f"time {seg_t['no remat'] * 1e3:.2f} ms;  sqrt(L) = {np.sqrt(L):.1f}")
        '''),
        code('''
        ks = [r[0] for r in seg_rows]
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.4))
        a1.plot(ks, [r[2] / 1024 for r in seg_rows], "o-", label="saved at boundaries")
        a1.plot(ks, [r[3] / 1024 for r in seg_rows], "s--", label="+ one recomputed segment (model)")
        a1.axhline(base["act_bytes"] / 1024, color="gray", ls=":", label="no remat")
        a1.axvline(np.sqrt(L), color="k", lw=0.5)
        a1.set_xscale("log", base=2); a1.set_xlabel("segment size k (layers)")
        a1.set_ylabel("activation memory (KiB)"); a1.legend(fontsize=8)
        a2.plot(ks, [100 * r[5] for r in seg_rows], "o-", label="time")
        a2.plot(ks, [100 * (r[4] / base["eqns"] - 1) for r in seg_rows], "s-", label="equations")
        a2.axhline(33, color="gray", ls=":", label="rule of thumb: ~33 %")
        a2.set_xscale("log", base=2); a2.set_xlabel("segment size k (layers)")
        a2.set_ylabel("extra over no remat (%)"); a2.legend(fontsize=8)
        fig.tight_layout()
        '''),
        md('''
        ## Correctness is not negotiable
        Every policy computes the same gradient; only where the values come from
        changes.  (Checked against the un-checkpointed gradient.)
        '''),
        code('''
        g_ref = xform.jit(xform.grad(policies["no remat"]))(Ws, x)
        for name, loss in list(policies.items())[1:] + [("segments k=4", segmented_loss(4))]:
            xform.testing.assert_allclose(xform.jit(xform.grad(loss))(Ws, x), g_ref,
                                          atol=1e-5, rtol=1e-4)
        print("all policies: same gradient")
        '''),
    ]

def the_ir():
    return [
        md('''
        # The IR: every transformation is a program you can print

        xform stages functions into a small typed IR (a *jaxpr*: SSA variables with
        shapes and dtypes, one primitive per equation, explicit literals).  The
        backward program is explicit, printable IR, not a hidden tape.  This
        notebook follows one function through every stage: the program, its JVP,
        its linearization, the transpose of that (reverse mode), `grad`, `vmap`,
        control flow, the IR passes, and finally the StableHLO handed to XLA and
        the optimised HLO XLA gives back.
        '''),
        code('''
        import re
        import numpy as np
        import xform
        import xform.numpy as xnp
        from xform import lax
        from xform._src.interpreters import passes

        def f(x):
            return xnp.sum(xnp.sin(x) * x ** 2)

        x = xnp.asarray([0.5, 1.0, 2.0])
        f_jaxpr = xform.make_jaxpr(f)(x)
        f_jaxpr          # the last expression of a cell renders through _repr_html_
        '''),
        md('''
        A `ClosedJaxpr` is data: equations with a primitive, inputs, outputs and
        params.  It is also callable (the evaluator binds each primitive, so
        evaluating it under a transformation transforms it).
        '''),
        code('''
        for eqn in f_jaxpr.eqns:
            print(f"{eqn.primitive.name:12} params={dict(eqn.params)}  "
                  f"in={[v.aval.str_short() for v in eqn.invars]} -> out={[v.aval.str_short() for v in eqn.outvars]}")
        print("evaluated:", f_jaxpr(x), "  direct:", f(x))
        '''),
        md('''
        ## Forward mode: the JVP program
        `jvp` pushes a tangent along with the primal; staged, it is one program
        computing both outputs.
        '''),
        code('''
        xform.make_jaxpr(lambda x, t: xform.jvp(f, (x,), (t,)))(x, xnp.ones(3))
        '''),
        md('''
        ## Linearize: partial evaluation splits the JVP
        `linearize` runs the JVP with the primal values known and the tangents
        unknown: everything that depends only on `x` is computed now, and what is
        left is a *linear* program in the tangent.  Its constants (`a b c d` in
        the binder before `;`) are the **residuals**, the values reverse mode
        must keep alive.
        '''),
        code('''
        y, f_lin = xform.linearize(f, x)
        print("f(x) =", y)
        print(f_lin)
        print("f_lin(ones) =", f_lin(xnp.ones(3)), " (the directional derivative)")
        '''),
        md('''
        ## Transpose: reverse mode from the linear program
        Transposing the linear program (each linear primitive has a transpose rule;
        the equations run backwards) gives the vector-Jacobian product.
        `linear_transpose` does it to any linear function; `vjp` is exactly
        linearize + transpose, and its `transpose_jaxpr()` shows the backward
        program.
        '''),
        code('''
        f_T = xform.linear_transpose(f_lin, x)
        print("transpose of f_lin:")
        print(f_T)
        _, f_vjp = xform.vjp(f, x)
        print("\\nvjp's backward program:")
        print(f_vjp.transpose_jaxpr())
        print("\\nf_T(1.0) =", f_T(xnp.asarray(1.0))[0], "   vjp(1.0) =", f_vjp(xnp.asarray(1.0))[0])
        '''),
        md('''
        A transpose is only right if $\\langle T(c), t \\rangle = \\langle c, L(t) \\rangle$
        for all $c, t$ (the dot-product test):
        '''),
        code('''
        rng = np.random.default_rng(0)
        t = xnp.asarray(rng.standard_normal(3, dtype=np.float32))
        c = xnp.asarray(np.float32(rng.standard_normal()))
        lhs = float(xnp.vdot(f_T(c)[0], t))
        rhs = float(c * f_lin(t))
        print(f"<T(c), t> = {lhs:.6f}   <c, L(t)> = {rhs:.6f}")
        '''),
        md('''
        ## `grad` is staged like everything else
        Forward pass, residuals, backward pass: one program, the backward half
        made of ordinary equations.
        '''),
        code('''
        xform.make_jaxpr(xform.grad(f))(x)
        '''),
        md('''
        ## `vmap`, nested `jit` and control flow
        `vmap` rewrites each equation with its batching rule.  A `jit` inside a
        staged function is a higher-order equation holding its own program; so are
        `cond` and loops, which keep *both* branches / the loop body in the IR.
        '''),
        code('''
        print(xform.make_jaxpr(xform.vmap(lambda v: v @ v))(xnp.ones((4, 3))))

        def g(x):
            y = xform.jit(lambda v: xnp.tanh(v) * 2.0)(x)
            y = lax.fori_loop(0, 3, lambda i, c: c * 0.5 + 1.0, y)
            return lax.cond(y.sum() > 0, lambda v: v, lambda v: -v, y)

        xform.make_jaxpr(g)(x)
        '''),
        md('''
        Python control flow on a *traced* value cannot be staged (the tracer has no
        value yet).  It raises a concretization error that names the user's line
        and what to use instead, instead of silently baking in one branch:
        '''),
        code('''
        def bad(x):
            if x.sum() > 0:
                return x
            return -x

        try:
            xform.jit(bad)(x)
        except TypeError as e:
            print(type(e).__name__ + ":", e)
        '''),
        md('''
        ## Passes: forwarding, CSE, DCE
        `interpreters.passes.simplify` runs program-to-program passes (each
        returns a new program with the same interface); `jit` runs them before
        lowering.  Here a program with a duplicated `sin`, a dead `cos` and a no-op
        cast:
        '''),
        code('''
        def wasteful(x):
            a = xnp.sin(x)
            b = xnp.sin(x)                      # common subexpression
            _ = xnp.cos(x) * 3.0                 # dead code
            c = a.astype(xnp.float32)            # a cast to the same dtype: identity
            return c + b

        before = xform.make_jaxpr(wasteful)(x)
        after = passes.simplify(before)
        print(f"before: {len(before.eqns)} equations\\n{before}\\n")
        print(f"after:  {len(after.eqns)} equations\\n{after}")
        print("\\nsame result:", np.allclose(before(x)[0], after(x)[0]))
        '''),
        md('''
        ## Lowering: StableHLO, then what XLA makes of it
        `jit(f).lower(x).as_text()` is the StableHLO module xform emits (one op
        per equation; `loc(...)` source annotations are stripped here for
        reading).  `.compile()` hands it to XLA; the compiled module's text shows
        XLA's optimised HLO: here, everything fused into one loop.
        '''),
        code('''
        lowered = xform.jit(f).lower(x)
        print(re.sub(r"\\s*loc\\(.*\\)", "", lowered.as_text()))
        '''),
        code('''
        compiled = lowered.compile()
        hlo = compiled.as_text()
        start = hlo.index("%fused_computation") if "%fused_computation" in hlo else 0
        excerpt = re.sub(r", metadata=\\{[^}]*\\}", "", hlo[start:])
        print(excerpt[:2000])
        print({k: v for k, v in compiled.cost_analysis().items() if "{" not in k})
        '''),
    ]


def mixed_precision():
    return [
        md('''
        # Mixed precision: bfloat16, and float16 with dynamic loss scaling

        `xform.mixed_precision` has the API of DeepMind's `jmp`: a `Policy` says which
        dtype parameters are stored in, which the computation runs in and which the
        outputs have; loss scales keep small float16 gradients from underflowing.

        We train the demo MLP (64-128-64-10 on scikit-learn's digits) four ways, with
        the same initialisation and batches:

        1. float32 throughout (the reference);
        2. `params=float32,compute=bfloat16,output=float32` — bfloat16 has float32's
           exponent range, so no loss scaling is needed;
        3. float16 compute with `DynamicLossScale` (halve on a non-finite gradient and
           skip the step, double after `period` good steps);
        4. float16 compute **without** loss scaling.

        To make underflow visible on this small problem the loss is multiplied by
        `WEIGHT = 1e-5` (as happens with a small auxiliary-loss weight, or a mean over
        very many tokens) and the learning rate divided by it, so the float32 run is
        unchanged: its gradients are ~1e-8–1e-6, below float16's smallest normal
        number (6e-5) and partly below its smallest subnormal (6e-8).
        '''),
        code('''
        %matplotlib inline
        import time
        import numpy as np
        import matplotlib.pyplot as plt

        import xform
        import xform.numpy as xnp
        from xform import nn, mixed_precision as mp
        from xform.demo import load_digits_split, init_params, predict

        (xtr, ytr), (xte, yte) = load_digits_split()
        WEIGHT, LR, EPOCHS, BATCH = 1e-5, 0.1, 40, 128
        leaves = xform.tree_util.tree_leaves
        print(mp.get_policy("params=float32,compute=bfloat16,output=float32"))
        '''),
        code('''
        def train(policy, loss_scale):
            params = init_params([64, 128, 64, 10])          # float32 master weights

            def loss_fn(params, x, y):
                logits = policy.cast_to_output(
                    predict(policy.cast_to_compute(params), policy.cast_to_compute(x)))
                logp = nn.log_softmax(logits)
                return -WEIGHT * xnp.mean(xnp.sum(logp * nn.one_hot(y, 10), axis=-1))

            @xform.jit
            def step(params, ls, x, y):
                scaled = lambda p: ls.scale(loss_fn(p, x, y).astype(policy.compute_dtype))
                sloss, grads = xform.value_and_grad(scaled)(params)
                grads = policy.cast_to_param(ls.unscale(grads))
                finite = mp.all_finite(grads)
                new = xform.tree_util.tree_map(lambda p, g: p - (LR / WEIGHT) * g, params, grads)
                params = mp.select_tree(finite, new, params)     # skip non-finite steps
                zeros = sum((g == 0).sum() for g in leaves(grads)) / sum(g.size for g in leaves(grads))
                return params, ls.adjust(finite), ls.unscale(sloss.astype(xnp.float32)) / WEIGHT, zeros, finite

            rng = np.random.default_rng(1)
            ls, hist, zero_frac, skipped = loss_scale, [], [], 0
            for epoch in range(EPOCHS):
                order, total = rng.permutation(len(xtr)), 0.0
                for i in range(len(xtr) // BATCH):
                    idx = order[i * BATCH:(i + 1) * BATCH]
                    params, ls, loss, z, ok = step(params, ls, xtr[idx], ytr[idx])
                    total += float(loss); zero_frac.append(float(z)); skipped += not bool(ok)
                hist.append(total / (len(xtr) // BATCH))
            acc = float(xnp.mean(xnp.argmax(predict(params, xte), axis=-1) == yte))
            return dict(loss=hist, acc=acc, zero_frac=float(np.mean(zero_frac)), skipped=skipped,
                        final_scale=float(getattr(ls, "loss_scale", 1.0)))

        runs = {}
        t0 = time.perf_counter()
        for name, policy, ls in [
            ("float32", mp.get_policy("float32"), mp.NoOpLossScale()),
            ("bfloat16 compute", mp.get_policy("params=float32,compute=bfloat16,output=float32"),
             mp.NoOpLossScale()),
            ("float16 + dynamic loss scale", mp.get_policy("p=f32,c=f16,o=f32"),
             mp.DynamicLossScale(xnp.asarray(2.0 ** 15), period=200)),
            ("float16, no loss scaling", mp.get_policy("p=f32,c=f16,o=f32"), mp.NoOpLossScale()),
        ]:
            runs[name] = train(policy, ls)
        print(f"4 runs in {time.perf_counter() - t0:.1f} s")
        print(f"{'run':32s} {'final loss':>10s} {'test acc':>9s} {'zero grads':>11s} {'skipped':>8s} {'scale':>8s}")
        for name, r in runs.items():
            print(f"{name:32s} {r['loss'][-1]:10.4f} {r['acc']:9.3f} {r['zero_frac']:11.1%} "
                  f"{r['skipped']:8d} {r['final_scale']:8.0f}")
        '''),
        code('''
        fig, ax = plt.subplots(figsize=(7, 4))
        for name, r in runs.items():
            ax.plot(range(1, EPOCHS + 1), r["loss"], label=name,
                    linestyle="--" if "no loss" in name else "-")
        ax.set_yscale("log"); ax.set_xlabel("epoch"); ax.set_ylabel("training loss (unweighted)")
        ax.set_title("MLP on digits: mixed precision vs float32"); ax.legend()
        plt.show()
        '''),
        md('''
        **Reading the results.**  bfloat16 compute tracks float32 closely with no loss
        scaling: its 8-bit exponent covers the same range.  float16 with dynamic loss
        scaling also tracks float32: the loss is multiplied by 2^15 before
        differentiating, so the backward pass stays in float16's range, and the
        gradients are divided by the scale in float32.  Without loss scaling the
        float16 gradients underflow: most entries flush to zero (the "zero grads"
        column counts exact zeros, float32's come from inactive ReLUs) and the
        surviving ones are coarse subnormals, so training is slow and erratic.
        `all_finite` + `select_tree` skip the (rare) steps whose scaled gradients
        overflowed, and `DynamicLossScale.adjust` halves the scale after them.
        '''),
    ]


# ----------------------------------------------------------------- 06: persistence (export15)

NOTEBOOKS = NOTEBOOKS + ("06_persistence",)


def persistence():
    return [
        md("""
        # Programs and state that outlive the process

        Three pieces, each checked in a *fresh Python process* below:

        * **checkpoints** -- `xform.checkpointing.save(path, pytree)` /
          `restore(path, target=None)`: a zip of `.npy` arrays plus a JSON manifest of
          the tree, dtypes and key paths (no pickle), written atomically (temporary
          file + rename);
        * **`xform.export`** -- `export(jit(f))(*shapes)` stores the lowered StableHLO as
          a portable, versioned artifact with its calling convention, in **JAX's
          serialization format**: plain `jax.export.deserialize` can load and call it;
        * **DLPack** -- zero-copy exchange of arrays with NumPy / JAX.

        We train the demo MLP (digits, 64-128-64-10) with Adam, save parameters **and
        optimizer state**, restore them in a new process and check that training
        continues with *identical* losses.
        """),
        code('''
        import json, os, subprocess, sys, tempfile, textwrap
        import numpy as np
        import xform
        import xform.numpy as xnp
        from xform import checkpointing, export

        # The training code, as source, so the fresh process below runs the very same step.
        TRAIN_SRC = textwrap.dedent("""
            import numpy as np
            import xform
            import xform.numpy as xnp
            from xform.demo import load_digits_split, init_params, predict, loss_fn

            (xtr, ytr), (xte, yte) = load_digits_split()
            BATCH = 128

            def batch(step):                      # deterministic data order
                idx = np.random.default_rng(step).choice(len(xtr), BATCH, replace=False)
                return xtr[idx], ytr[idx]

            def adam_init(params):
                zeros = xform.tree_util.tree_map(xnp.zeros_like, params)
                return {"count": xnp.zeros((), xnp.int32), "mu": zeros, "nu": zeros}

            @xform.jit
            def train_step(params, opt, x, y, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
                loss, g = xform.value_and_grad(loss_fn)(params, x, y)
                tm = xform.tree_util.tree_map
                count = opt["count"] + 1
                mu = tm(lambda m, g: b1 * m + (1 - b1) * g, opt["mu"], g)
                nu = tm(lambda v, g: b2 * v + (1 - b2) * g * g, opt["nu"], g)
                c1, c2 = 1 - b1 ** count, 1 - b2 ** count
                params = tm(lambda p, m, v: p - lr * (m / c1) / (xnp.sqrt(v / c2) + eps),
                            params, mu, nu)
                return loss, params, {"count": count, "mu": mu, "nu": nu}
        """)
        exec(TRAIN_SRC)
        params = init_params([64, 128, 64, 10])
        opt = adam_init(params)
        losses = []
        for step in range(150):
            loss, params, opt = train_step(params, opt, *batch(step))
            losses.append(float(loss))
        print(f"loss: step 0 {losses[0]:.4f} -> step 149 {losses[-1]:.4f}")
        '''),
        md("""
        ## Save, then continue in two places

        The checkpoint holds the parameters (a list of `(W, b)` tuples), the Adam state
        (`count`, `mu`, `nu` pytrees) and the step.  Inside the zip everything is plain
        NumPy: `manifest.json` lists each leaf's key path, dtype and shape.
        """),
        code('''
        workdir = tempfile.mkdtemp()
        ckpt = os.path.join(workdir, "step_150.ckpt")
        checkpointing.save(ckpt, {"params": params, "opt": opt, "step": 150})
        import zipfile
        with zipfile.ZipFile(ckpt) as z:
            manifest = json.loads(z.read("manifest.json"))
        print(os.path.getsize(ckpt), "bytes;", len(manifest["leaves"]), "leaves, e.g.")
        for leaf in manifest["leaves"][:3] + manifest["leaves"][-2:]:
            print("  ", leaf["path"], leaf["dtype"], leaf["shape"])

        # continue here, in memory
        here = []
        for step in range(150, 200):
            loss, params_here, opt_here = train_step(params, opt, *batch(step))
            params, opt = params_here, opt_here
            here.append(float(loss))
        '''),
        code('''
        child = TRAIN_SRC + textwrap.dedent("""
            import json, sys
            from xform import checkpointing
            state = checkpointing.restore(sys.argv[1])       # no target: structure from the file
            params, opt, start = state["params"], state["opt"], state["step"]
            out = []
            for step in range(start, start + 50):
                loss, params, opt = train_step(params, opt, *batch(step))
                out.append(float(loss))
            print(json.dumps(out))
        """)
        r = subprocess.run([sys.executable, "-c", child, ckpt], capture_output=True, text=True,
                           cwd=workdir)
        assert r.returncode == 0, r.stderr[-2000:]
        there = json.loads(r.stdout.strip().splitlines()[-1])
        print("first losses here :", [round(v, 6) for v in here[:4]])
        print("first losses there:", [round(v, 6) for v in there[:4]])
        print("identical over 50 steps:", here == there)
        assert here == there
        '''),
        md("""
        ## Export `predict` once, call it from plain JAX

        `export.symbolic_shape("b")` makes the batch size a dimension variable: the
        artifact works for any batch.  xform traces with concrete shapes, so it lowers
        the program at a few sample sizes, checks that every size-dependent number is a
        polynomial in `b`, and writes shape-polymorphic StableHLO (dynamic ops plus
        JAX's shape assertions).  The bytes are JAX's `Exported` flatbuffer; a process
        that imports only JAX deserializes and calls them.
        """),
        code('''
        b, = export.symbolic_shape("b")
        exp = export.export(xform.jit(predict))(params, xform.ShapeDtypeStruct((b, 64), np.float32))
        print(exp.in_avals[-1], "->", exp.out_avals[0])
        blob_path = os.path.join(workdir, "predict.jaxexport")
        with open(blob_path, "wb") as f:
            f.write(exp.serialize())
        np.save(os.path.join(workdir, "x.npy"), xte[:37])
        print(exp.mlir_module()[:700], "...")
        '''),
        code('''
        jax_child = textwrap.dedent("""
            import sys, numpy as np
            try:
                import flatbuffers  # noqa: F401  (JAX's serializer needs it)
            except ImportError:
                print("SKIP: flatbuffers is not installed (pip install flatbuffers)")
                raise SystemExit(0)
            import jax
            from jax import export
            exp = export.deserialize(bytearray(open(sys.argv[1], "rb").read()))
            n = exp.in_tree.num_leaves
            leaves = [np.load(sys.argv[2] + f"/p{i}.npy") for i in range(n - 1)]
            x = np.load(sys.argv[2] + "/x.npy")
            (params, _), _ = exp.in_tree.unflatten(leaves + [x])
            print("in_avals[-1]:", exp.in_avals[-1], " out_avals:", exp.out_avals)
            np.save(sys.argv[2] + "/jax_out.npy", np.asarray(jax.jit(exp.call)(params, x)))
            print("plain JAX called the xform artifact on a batch of", x.shape[0])
        """)
        for i, leaf in enumerate(xform.tree_util.tree_leaves(params)):
            np.save(os.path.join(workdir, f"p{i}.npy"), np.asarray(leaf))
        r = subprocess.run([sys.executable, "-c", jax_child, blob_path, workdir],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]
        print(r.stdout)
        if "SKIP" not in r.stdout:
            jax_out = np.load(os.path.join(workdir, "jax_out.npy"))
            ours = np.asarray(predict(params, xte[:37]))
            print("max |JAX(export) - xform| =", float(np.abs(jax_out - ours).max()))
            assert np.allclose(jax_out, ours, atol=1e-5)
        '''),
        md("""
        ## DLPack: zero-copy hand-off

        `xform.dlpack.from_dlpack` views the producer's memory, and
        `Array.__dlpack__` lets NumPy or JAX view ours -- no copies on CPU.
        """),
        code('''
        import jax
        from xform import dlpack
        host = np.arange(6, dtype=np.float32)
        x = dlpack.from_dlpack(host)
        host[0] = 42.0
        print("xform sees the NumPy write:", float(x[0]))
        y = xform.jit(lambda v: v * 2)(x)
        j = jax.dlpack.from_dlpack(y)
        print("JAX views the same buffer:", j.unsafe_buffer_pointer() == y._buf.unsafe_buffer_pointer())
        '''),
    ]


# ----------------------------------------------------------------- 13: Gaussian processes (linalg13)

NOTEBOOKS = NOTEBOOKS + ("13_gaussian_process",)


def gaussian_process():
    return [
        md("""
        # Gaussian-process regression with `cholesky` + `cho_solve`

        A GP prior $f \\sim \\mathcal{GP}(0, k)$ with an RBF kernel
        $k(x, x') = s^2 \\exp(-(x - x')^2 / 2\\ell^2)$ and Gaussian noise $\\sigma^2$.
        Everything needs one factorisation $K + \\sigma^2 I = L L^T$
        (`xform.numpy.linalg.cholesky`, LAPACK `potrf` through XLA's FFI):

        * negative log marginal likelihood
          $\\tfrac12 y^T \\alpha + \\sum_i \\log L_{ii} + \\tfrac n2 \\log 2\\pi$ with
          $\\alpha = $ `cho_solve((L, True), y)`;
        * its gradient in the hyperparameters $(\\log s, \\log \\ell, \\log \\sigma)$ by
          `xform.grad` -- reverse mode through the Cholesky factor (JAX's JVP rule,
          transposed) and the triangular solves;
        * the posterior mean $K_*^T \\alpha$ and variance
          $\\mathrm{diag}(K_{**}) - \\|L^{-1} K_*\\|^2$ (`solve_triangular`).

        The code is written against the JAX API: `import xform as jax` would run it.
        """),
        code('''
        %matplotlib inline
        import numpy as np
        import matplotlib.pyplot as plt
        import xform
        import xform.numpy as jnp
        from xform.scipy.linalg import cho_solve, solve_triangular

        rng = np.random.default_rng(0)
        x = np.sort(rng.uniform(-4, 4, 40)).astype(np.float32)
        y = (np.sin(1.5 * x) + 0.3 * x + 0.15 * rng.standard_normal(40)).astype(np.float32)
        xs = np.linspace(-5, 5, 200).astype(np.float32)

        def rbf(a, b, log_s, log_l):
            d = a[:, None] - b[None, :]
            return jnp.exp(2 * log_s) * jnp.exp(-0.5 * d ** 2 / jnp.exp(2 * log_l))

        def nll(theta, x, y):
            log_s, log_l, log_noise = theta
            K = rbf(x, x, log_s, log_l) + (jnp.exp(2 * log_noise) + 1e-5) * jnp.eye(x.shape[0])
            L = jnp.linalg.cholesky(K)
            alpha = cho_solve((L, True), y)
            return (0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diagonal(L)))
                    + 0.5 * x.shape[0] * np.log(2 * np.pi))

        theta0 = jnp.array([0.0, 0.0, -1.0])
        print("nll(theta0) =", float(nll(theta0, x, y)))
        print("grad        =", np.asarray(xform.grad(nll)(theta0, x, y)))
        '''),
        md("""
        The same function in JAX (the oracle installed for tests) gives the same value and
        gradient:
        """),
        code('''
        import jax, jax.numpy as jjnp, jax.scipy.linalg as jsl
        def nll_jax(theta, x, y):
            log_s, log_l, log_noise = theta
            d = x[:, None] - x[None, :]
            K = (jjnp.exp(2 * log_s) * jjnp.exp(-0.5 * d ** 2 / jjnp.exp(2 * log_l))
                 + (jjnp.exp(2 * log_noise) + 1e-5) * jjnp.eye(x.shape[0]))
            L = jjnp.linalg.cholesky(K)
            return (0.5 * y @ jsl.cho_solve((L, True), y) + jjnp.sum(jjnp.log(jjnp.diagonal(L)))
                    + 0.5 * x.shape[0] * np.log(2 * np.pi))
        t0 = np.array([0.0, 0.0, -1.0], np.float32)
        print("value: ", float(nll(t0, x, y)), float(nll_jax(t0, x, y)))
        print("grad:  ", np.asarray(xform.grad(nll)(t0, x, y)), np.asarray(jax.grad(nll_jax)(t0, x, y)))
        assert np.allclose(xform.grad(nll)(t0, x, y), jax.grad(nll_jax)(t0, x, y), rtol=1e-4, atol=1e-4)
        '''),
        md("""
        ## Fitting the hyperparameters by gradient descent

        Adam on $\\theta = (\\log s, \\log \\ell, \\log \\sigma)$, one compiled step
        (`jit(value_and_grad)`).
        """),
        code('''
        @xform.jit
        def step(theta, m, v, t):
            val, g = xform.value_and_grad(nll)(theta, x, y)
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            mhat, vhat = m / (1 - 0.9 ** t), v / (1 - 0.999 ** t)
            return theta - 0.05 * mhat / (jnp.sqrt(vhat) + 1e-8), m, v, val

        theta, m, v = theta0, jnp.zeros(3), jnp.zeros(3)
        history = []
        for t in range(1, 301):
            theta, m, v, val = step(theta, m, v, float(t))
            history.append(float(val))
        s, l, noise = np.exp(np.asarray(theta))
        print(f"nll {history[0]:.3f} -> {history[-1]:.3f};  s = {s:.3f}, l = {l:.3f}, noise = {noise:.3f}")
        '''),
        md("""
        scikit-learn's GP (L-BFGS on the same marginal likelihood) lands on the same
        hyperparameters:
        """),
        code('''
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
        gp = GaussianProcessRegressor(ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.1),
                                      normalize_y=False, n_restarts_optimizer=2, random_state=0)
        gp.fit(x[:, None].astype(np.float64), y.astype(np.float64))
        k = gp.kernel_
        print(f"sklearn: s = {np.sqrt(k.k1.k1.constant_value):.3f}, l = {k.k1.k2.length_scale:.3f}, "
              f"noise = {np.sqrt(k.k2.noise_level):.3f}")
        print(f"xform:   s = {s:.3f}, l = {l:.3f}, noise = {noise:.3f}")
        '''),
        md("""
        ## Posterior predictive
        """),
        code('''
        @xform.jit
        def posterior(theta, x, y, xs):
            log_s, log_l, log_noise = theta
            K = rbf(x, x, log_s, log_l) + (jnp.exp(2 * log_noise) + 1e-5) * jnp.eye(x.shape[0])
            L = jnp.linalg.cholesky(K)
            alpha = cho_solve((L, True), y)
            Ks = rbf(x, xs, log_s, log_l)
            mean = Ks.T @ alpha
            w = solve_triangular(L, Ks, lower=True)
            var = jnp.exp(2 * log_s) - jnp.sum(w ** 2, axis=0)
            return mean, var

        mean, var = map(np.asarray, posterior(theta, x, y, xs))
        sd = np.sqrt(np.maximum(var + np.exp(2 * np.asarray(theta)[2]), 0))
        sk_mean, sk_sd = gp.predict(xs[:, None].astype(np.float64), return_std=True)
        print("max |mean - sklearn mean| =", float(np.abs(mean - sk_mean).max()))

        fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 3.6))
        ax0.plot(history)
        ax0.set_xlabel("Adam step"); ax0.set_ylabel("negative log marginal likelihood")
        ax1.fill_between(xs, mean - 2 * sd, mean + 2 * sd, alpha=0.25, label="±2 sd")
        ax1.plot(xs, mean, label="posterior mean")
        ax1.plot(xs, np.sin(1.5 * xs) + 0.3 * xs, "k--", lw=1, label="truth")
        ax1.plot(x, y, "o", ms=3, label="data")
        ax1.legend(loc="upper left", fontsize=8)
        plt.tight_layout()
        '''),
        md("""
        The optimiser and scikit-learn agree on the hyperparameters and the posterior mean;
        the band widens away from the data as it should.  Swapping `import xform` for
        `import jax` runs the same cells on JAX.
        """),
    ]


# ----------------------------------------------------------------- 12: convolutions (conv12)

NOTEBOOKS = NOTEBOOKS + ("12_convolutions",)


def convolutions():
    return [
        md("""
        # Convolutions, pooling and FFTs: a CNN on digits

        `lax.conv_general_dilated` is XLA's general convolution (strides, padding
        modes, lhs/rhs dilation, layouts as `('NHWC', 'HWIO', 'NHWC')`, feature and
        batch groups); `lax.reduce_window` with `lax.max` is max pooling, exactly as
        Flax and `jax.example_libraries.stax` write it.  Both are primitives with a
        NumPy reference, an XLA lowering and JVP / transpose / batching rules, so
        `jit(value_and_grad(...))` of a CNN compiles to one XLA program.

        Below: the demo's second model (`python -m xform.demo --cnn`, code in
        `xform/demo_cnn.py`) trained on scikit-learn's 8x8 digits, its gradient
        checked against JAX, then FFT-based convolution.
        """),
        code("""
        %matplotlib inline
        import time
        import numpy as np
        import matplotlib.pyplot as plt

        import xform
        import xform.lax as lax
        import xform.numpy as xnp
        from xform import demo_cnn
        (xtr, ytr), (xte, yte) = demo_cnn.load_digits_images()
        print("train", xtr.shape, "test", xte.shape)
        """),
        md("""
        ## The model
        conv 3x3 (16) - relu - maxpool 2x2 - conv 3x3 (32) - relu - maxpool 2x2 - dense (10).
        `cnn_predict` is ten lines of `lax` calls; the training step is
        `jit(value_and_grad(loss))` plus SGD with momentum.
        """),
        code("""
        import inspect
        print(inspect.getsource(demo_cnn.cnn_predict))
        params = demo_cnn.init_cnn(0)
        print(xform.make_jaxpr(demo_cnn.cnn_predict)(params, xtr[:2]))
        """),
        md("""
        ## Training under `jit(value_and_grad)`
        """),
        code("""
        step = demo_cnn.make_step(lr=0.05)
        velocity = xform.tree_util.tree_map(xnp.zeros_like, params)
        rng = np.random.default_rng(1)
        losses, accs = [], []
        t0 = time.perf_counter()
        for epoch in range(8):
            order = rng.permutation(len(xtr))
            for i in range(len(xtr) // 64):
                idx = order[i * 64:(i + 1) * 64]
                loss, params, velocity = step(params, velocity, xtr[idx], ytr[idx])
                losses.append(float(loss))
            accs.append(demo_cnn.accuracy(params, xte, yte))
        print(f"8 epochs in {time.perf_counter() - t0:.1f} s; test accuracy {accs[-1]:.3f}")
        fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3))
        a.plot(losses); a.set_yscale("log"); a.set_xlabel("step"); a.set_ylabel("loss")
        b.plot(range(1, 9), accs, "o-"); b.set_xlabel("epoch"); b.set_ylabel("test accuracy")
        plt.show()
        """),
        code("""
        w1 = np.asarray(params["conv1"][0])          # (3, 3, 1, 16), HWIO
        fig, axes = plt.subplots(2, 8, figsize=(10, 2.6))
        for k, ax in enumerate(axes.flat):
            ax.imshow(w1[:, :, 0, k], cmap="RdBu"); ax.axis("off")
        fig.suptitle("first-layer filters after training")
        plt.show()
        """),
        md("""
        ## The gradient is JAX's
        The same network written with `jax.lax` / `jax.nn` on the same parameters gives
        the same loss and gradients (to float32 rounding): the convolution's transposes
        (gradient convolutions) and max pooling's `select_and_scatter_add` follow XLA's
        semantics.
        """),
        code("""
        import jax, jax.numpy as jnp

        def jax_loss(p, x, y):
            for name in ("conv1", "conv2"):
                w, b = p[name]
                x = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                 dimension_numbers=demo_cnn.DN)
                x = jax.lax.reduce_window(jax.nn.relu(x + b), -jnp.inf, jax.lax.max,
                                          (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
            w, b = p["dense"]
            logits = x.reshape(x.shape[0], -1) @ w + b
            return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * jax.nn.one_hot(y, 10), -1))

        p0 = demo_cnn.init_cnn(0)
        g = xform.grad(demo_cnn.cnn_loss)(p0, xtr[:64], ytr[:64])
        jg = jax.grad(jax_loss)({k: tuple(map(np.asarray, v)) for k, v in p0.items()},
                                xtr[:64], ytr[:64])
        for k in g:
            print(k, [float(np.abs(np.asarray(a) - np.asarray(b)).max())
                      for a, b in zip(g[k], jg[k])])
        """),
        md("""
        ## FFTs: convolution theorem
        `xform.numpy.fft` has all 18 functions of `jax.numpy.fft` on the `fft`
        primitive (FFT / IFFT / RFFT / IRFFT over 1-3 axes).  Direct and FFT-based
        convolution agree, and gradients flow through both.
        """),
        code("""
        import xform.scipy.signal as signal
        t = np.linspace(0, 1, 512, endpoint=False)
        sig = (np.sin(2 * np.pi * 7 * t) + 0.5 * np.random.default_rng(0).standard_normal(512)
               ).astype(np.float32)
        kernel = np.hanning(31).astype(np.float32); kernel /= kernel.sum()
        direct = signal.convolve(sig, kernel, mode="same")
        viafft = signal.fftconvolve(sig, kernel, mode="same")
        print("max |direct - fft|:", float(xnp.max(xnp.abs(direct - viafft))))
        spectrum = xnp.abs(xnp.fft.rfft(sig))
        freqs = xnp.fft.rfftfreq(512, d=1 / 512)
        fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3))
        a.plot(t, sig, lw=0.5, label="noisy"); a.plot(t, direct, label="smoothed"); a.legend()
        b.plot(freqs[:40], spectrum[:40]); b.set_xlabel("frequency (Hz)")
        plt.show()
        g = xform.grad(lambda k: xnp.sum(signal.fftconvolve(sig, k, mode="same") ** 2))(kernel)
        g2 = xform.grad(lambda k: xnp.sum(signal.convolve(sig, k, mode="same") ** 2))(kernel)
        print("gradient through FFT vs direct:", float(xnp.max(xnp.abs(g - g2))))
        """),
    ]


# ----------------------------------------------------------------- 14: many devices (shard14)

NOTEBOOKS = NOTEBOOKS + ("14_many_devices",)


def many_devices():
    return [
        md("""
        # Many devices: data- and tensor-parallel training on 8 CPU devices

        XLA's SPMD partitioner splits one program over a *mesh* of devices; xform
        annotates programs with JAX's sharding API and lets XLA do the rest.  On a
        laptop, 8 virtual CPU devices stand in for 8 accelerators: the flag must be
        set before the first computation.
        """),
        code("""
        import os
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
        import numpy as np
        import xform, xform.numpy as xnp
        from xform.sharding import NamedSharding, PartitionSpec as P
        print(xform.devices())
        """),
        md("""
        ## Sharded arrays

        A `NamedSharding(mesh, P(...))` says which mesh axis splits which array dimension.
        `device_put` lays an array out that way; each device holds one *shard*.
        """),
        code("""
        mesh = xform.make_mesh((2, 4), ("x", "y"))
        a = xform.device_put(np.arange(64.0, dtype=np.float32).reshape(8, 8),
                             NamedSharding(mesh, P("x", "y")))
        print(a.sharding)
        for s in a.addressable_shards[:3]:
            print(s.device, s.index, s.data.shape)
        xform.debug.visualize_array_sharding(a)
        """),
        md("""
        ## A training step, two ways

        The same MLP step, compiled once with the batch split over all 8 devices
        (data parallel), and once on the 2x4 mesh with the batch split over `x` and the
        hidden units over `y` (tensor parallel).  Both give the single-device losses.
        """),
        code("""
        def loss(p, x, y):
            h = xnp.tanh(x @ p["w1"] + p["b1"])
            return ((h @ p["w2"] - y) ** 2).mean()

        def step(p, x, y):
            l, g = xform.value_and_grad(loss)(p, x, y)
            return xform.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), l

        r = np.random.default_rng(0)
        params = {"w1": (r.standard_normal((16, 32)) * 0.3).astype(np.float32),
                  "b1": np.zeros(32, np.float32),
                  "w2": (r.standard_normal((32, 4)) * 0.3).astype(np.float32)}
        x = r.standard_normal((64, 16)).astype(np.float32)
        y = r.standard_normal((64, 4)).astype(np.float32)

        dmesh = xform.make_mesh((8,), ("data",))
        rep, rows = NamedSharding(dmesh, P()), NamedSharding(dmesh, P("data"))
        dp_step = xform.jit(step, in_shardings=(rep, rows, rows), out_shardings=(rep, rep))

        tp_params = {"w1": NamedSharding(mesh, P(None, "y")), "b1": NamedSharding(mesh, P("y")),
                     "w2": NamedSharding(mesh, P("y", None))}
        batch = NamedSharding(mesh, P("x"))
        tp_step = xform.jit(step, in_shardings=(tp_params, batch, batch),
                            out_shardings=(tp_params, NamedSharding(mesh, P())))

        single, dp, tp = xform.jit(step), dp_step, tp_step
        p1 = p2 = p3 = params
        for i in range(5):
            p1, l1 = single(p1, x, y)
            p2, l2 = dp(p2, x, y)
            p3, l3 = tp(p3, x, y)
            print(f"step {i}: single {float(l1):.6f}  data-parallel {float(l2):.6f}  "
                  f"tensor-parallel {float(l3):.6f}")
        print("w1 on the 2x4 mesh:", p3["w1"].sharding.spec,
              "shard shape", p3["w1"].addressable_shards[0].data.shape)
        xform.debug.visualize_array_sharding(p3["w1"])
        """),
        md("""
        ## Per-device code: `shard_map` and collectives

        `shard_map` runs a function on each device's block; collectives
        (`psum`, `pmean`, `all_gather`, `ppermute`, ...) become StableHLO collectives.
        The data-parallel gradient written by hand: local gradients, then a mean over
        the `data` axis.
        """),
        code("""
        grads = xform.shard_map(lambda p, x, y: xform.lax.pmean(xform.grad(loss)(p, x, y), "data"),
                                mesh=dmesh, in_specs=(P(), P("data"), P("data")),
                                out_specs=P())(params, x, y)
        ref = xform.grad(loss)(params, x, y)
        print("max |shard_map grad - grad|:",
              max(float(xnp.max(xnp.abs(grads[k] - ref[k]))) for k in ref))
        ring = xform.shard_map(lambda v: xform.lax.ppermute(v, "data", [(i, (i + 1) % 8) for i in range(8)]),
                               mesh=dmesh, in_specs=P("data"), out_specs=P("data"))
        print(ring(np.arange(8.0, dtype=np.float32)))
        """),
        md("""
        ## Exporting a sharded program

        `xform.export` of a function jitted with shardings records the mesh layout:
        `nr_devices`, the in/out shardings, and a module carrying JAX's Shardy
        annotations.  The bytes are JAX's format, so plain JAX loads the tensor-parallel
        loss and runs it on its own 8 devices.
        """),
        code("""
        import jax
        from xform import export
        tp_loss = xform.jit(loss, in_shardings=(tp_params, batch, batch))
        exp = export.export(tp_loss)(params, x, y)
        print("nr_devices:", exp.nr_devices)
        print("w1 sharding:", exp.in_tree.unflatten(exp.in_shardings_hlo)[0][0]["w1"])
        jexp = jax.export.deserialize(exp.serialize())
        jmesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
        jargs = jax.tree_util.tree_map(jax.device_put, jexp.in_tree.unflatten(
            [np.asarray(v) for v in jax.tree_util.tree_leaves(((params, x, y), {}))]),
            jexp.in_tree.unflatten(jexp.in_shardings_jax(jmesh)))[0]
        print("JAX runs the xform export:", float(jexp.call(*jargs)),
              " xform:", float(tp_loss(params, x, y)))
        """),
    ]


_CELLS = {name: globals()[name[3:]] for name in NOTEBOOKS if name[3:] in globals()}


if __name__ == "__main__":
    main()
