"""Run a JAX library's own test suite on real JAX and on xform, side by side.

    python tools/library_tests/run.py equinox [--files test_module.py ...] [--backend both]

The library must be installed (the versions pinned in pyproject's ``test`` extra). Its
tests come from the installed package where the wheel ships them (chex, haiku, optax),
from the release's source distribution where that ships them (blackjax: ``--source`` an
unpacked sdist folder or its ``.tar.gz``; without one, ``pip download --no-binary`` fetches
the installed version's), otherwise from a git checkout of the library at its release
tag: pass ``--source DIR`` (a git directory, e.g. one made by ``git clone --mirror``, or a
folder already holding the tests at that release) or set ``XFORM_LIBTESTS_<LIB>``.
Each backend runs in its own pytest process (the alias and real JAX cannot share one);
the xform run loads ``xform_alias_plugin`` so every ``import jax`` is xform's.

Prints, per test file: cases passed on JAX, on xform, and how many of JAX's passing
cases pass on xform (the yardstick); ``--json OUT`` writes the case lists."""
from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).parent

# library -> (distribution, where its tests live, tag pattern, default test files)
LIBRARIES = {
    "equinox": ("equinox", "git", "v{version}", ["tests/test_module.py", "tests/test_filters.py",
                "tests/test_tree.py", "tests/test_vmap.py", "tests/test_update.py",
                "tests/test_jit.py", "tests/test_nn.py"]),
    "flax": ("flax", "git", "v{version}", ["tests/nnx/optimizer_test.py",
             "tests/nnx/nn/linear_test.py", "tests/nnx/nn/conv_test.py",
             "tests/nnx/module_test.py", "tests/linen/linen_combinators_test.py",
             "tests/linen/linen_linear_test.py"]),
    # (numpyro's mirror may lack the installed release's tag: --ref master)
    # (test/test_distributions.py has 8898 cases: measured with -k 'test_dist_shape or
    # test_log_prob_gradient or test_jit_log_likelihood or test_sample_gradient or
    # test_cdf_and_icdf or test_vmap_dist', 2076 of them)
    "numpyro": ("numpyro", "git", "{version}", ["test/test_distributions_util.py",
                "test/infer/test_svi.py", "test/test_handlers.py", "test/test_util.py",
                "test/infer/test_infer_util.py", "test/infer/test_reparam.py",
                "test/test_transforms.py", "test/infer/test_hmc_gibbs.py",
                "test/infer/test_autoguide.py", "test/infer/test_mcmc.py",
                "test/test_distributions.py"]),
    "orbax": ("orbax-checkpoint", "git", "v{version}", [
              f"checkpoint/orbax/checkpoint/{f}_test.py" for f in (
                  "_src/serialization/serialization", "_src/serialization/replica_slices",
                  "_src/serialization/tensorstore_utils", "_src/arrays/abstract_arrays",
                  "_src/arrays/fragments", "_src/arrays/numpy_utils", "_src/tree/utils",
                  "_src/metadata/tree", "_src/handlers/composite_checkpoint_handler",
                  "_src/handlers/json_checkpoint_handler", "_src/path/atomicity",
                  "checkpoint_utils")]),
    "chex": ("chex", "package", None, ["chex/_src/dataclass_test.py", "chex/_src/asserts_test.py",
             "chex/_src/variants_test.py"]),
    "haiku": ("dm-haiku", "package", None, ["haiku/_src/basic_test.py",
              "haiku/_src/module_test.py", "haiku/_src/transform_test.py"]),
    "optax": ("optax", "package", None, ["optax/_src/alias_test.py",
              "optax/_src/numerics_test.py", "optax/_src/update_test.py"]),
    "distrax": ("distrax", "package", None, [
                f"distrax/_src/{f}_test.py" for f in (
                    "distributions/normal", "distributions/categorical",
                    "distributions/mvn_diag", "distributions/transformed",
                    "distributions/independent", "distributions/mixture_same_family",
                    "bijectors/tanh", "bijectors/scalar_affine", "bijectors/chain",
                    "bijectors/block", "utils/math")]),
    "jaxopt": ("jaxopt", "git", "jaxopt-v{version}", [
               f"tests/{f}_test.py" for f in (
                   "lbfgs", "gradient_descent", "proximal_gradient", "projection",
                   "prox", "bisection", "broyden", "implicit_diff", "tree_util",
                   "linear_solve", "zoom_linesearch")]),
    "lineax": ("lineax", "git", "v{version}", ["tests/test_solve.py", "tests/test_operator.py",
               "tests/test_misc.py", "tests/test_singular.py", "tests/test_norm.py"]),
    "optimistix": ("optimistix", "git", "v{version}", ["tests/test_root_find.py",
                   "tests/test_minimise.py", "tests/test_least_squares.py",
                   "tests/test_fixed_point.py", "tests/test_misc.py"]),
    # (test_integrate.py's test_basic/test_ode_order/test_sde_strong_order are 488 solves:
    # hours on a few cores; a -k subset via --pytest-args keeps one run short)
    "diffrax": ("diffrax", "git", "v{version}", ["test/test_integrate.py",
                "test/test_adjoint.py", "test/test_vmap.py", "test/test_brownian.py",
                "test/test_event.py", "test/test_saveat_solution.py", "test/test_term.py",
                "test/test_interpolation.py"]),
    # blackjax's repository is large; its sdist ships tests/ (with pytest.ini:
    # filterwarnings = error)
    "blackjax": ("blackjax", "sdist", None, ["tests/mcmc/test_sampling.py",
                 "tests/mcmc/test_integrators.py", "tests/mcmc/test_proposal.py",
                 "tests/mcmc/test_trajectory.py", "tests/mcmc/test_metrics.py",
                 "tests/mcmc/test_uturn.py", "tests/mcmc/test_mala.py",
                 "tests/mcmc/test_barker.py", "tests/mcmc/test_elliptical_slice.py",
                 "tests/optimizers/test_optimizers.py", "tests/optimizers/test_pathfinder.py",
                 "tests/smc/test_resampling.py", "tests/smc/test_smc.py",
                 "tests/sgmcmc/test_kernels.py", "tests/adaptation/test_step_size.py",
                 "tests/adaptation/test_mass_matrix.py"]),
    "jaxtyping": ("jaxtyping", "git", "v{version}", ["test/test_array.py",
                  "test/test_decorator.py", "test/test_pytree.py", "test/test_messages.py",
                  "test/test_generators.py"]),
}


def _site_root(dist, files):
    top = (importlib.metadata.distribution(dist).read_text("top_level.txt") or "").split()
    # the package holding the tests (dm-haiku's top_level.txt lists docs/ and examples/
    # before haiku/)
    first = [f.split("/")[0] for f in files[:1]]
    for name in first + top + [dist.replace("-", "_")]:
        spec = importlib.util.find_spec(name) if name.isidentifier() else None
        if spec is not None and spec.origin:
            return Path(spec.origin).parents[1]
    raise SystemExit(f"cannot find where {dist} is installed")


def _sdist(dist, source, dest):
    """The unpacked source distribution of the installed version of ``dist``."""
    version = importlib.metadata.version(dist)
    if source and Path(source).is_dir():
        return Path(source)
    if not source:
        subprocess.run([sys.executable, "-m", "pip", "download", f"{dist}=={version}",
                        "--no-binary", ":all:", "--no-deps", "--no-build-isolation",
                        "-d", str(dest)], check=True, stdout=subprocess.DEVNULL)
        found = sorted(Path(dest).glob("*.tar.gz"))
        if not found:
            raise SystemExit(f"pip download found no source distribution of {dist}=={version}")
        source = found[0]
    subprocess.run(["tar", "-xzf", str(source), "-C", str(dest)], check=True)
    tops = [d for d in Path(dest).iterdir() if d.is_dir()]
    if len(tops) != 1:
        raise SystemExit(f"{source} is not one unpacked source tree")
    return tops[0]


def _checkout(lib, dist, tag_pattern, source, dest, files, ref=None):
    if not (Path(source) / "HEAD").exists() and Path(source).is_dir():
        return Path(source)   # a folder already holding the release's tests
    version = importlib.metadata.version(dist)
    tag = ref or tag_pattern.format(version=version)
    tags = subprocess.run(["git", "--git-dir", source, "tag"], capture_output=True,
                          text=True, check=True).stdout.split()
    if tag not in tags and not ref:   # the closest older release the checkout has
        import re
        def key(t):
            return tuple(int(x) for x in re.findall(r"\d+", t))
        older = sorted((t for t in tags if re.fullmatch(r"v?\d+(\.\d+)*", t)
                        and key(t) <= key(tag)), key=key)
        if not older:
            raise SystemExit(f"{source} has no tag {tag} nor an older release")
        print(f"note: {source} has no tag {tag}; using {older[-1]}", file=sys.stderr)
        tag = older[-1]
    archive = subprocess.run(["git", "--git-dir", source, "archive", tag],
                             capture_output=True)
    if archive.returncode:   # a mirror without some large blobs (LFS, data): take only
        # the root's files and the folders holding the requested tests
        tops = {f.split("/")[0] for f in files}
        blobs = subprocess.run(["git", "--git-dir", source, "ls-tree", tag],
                               capture_output=True, text=True, check=True).stdout
        paths = sorted(tops | {l.split("\t")[1] for l in blobs.splitlines()
                               if l.split()[1] == "blob"})
        archive = subprocess.run(["git", "--git-dir", source, "archive", tag, *paths],
                                 capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def _run(backend, root, files, timeout, extra, log=None):
    xml = Path(tempfile.mkstemp(suffix=".xml")[1])
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
           f"--junitxml={xml}", "--rootdir", str(root), *extra, *files]
    if backend == "xform":
        # this checkout's xform (the tests run from the library's folder, where an
        # editable install elsewhere would otherwise win)
        env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(HERE.parents[1]),
                                             env.get("PYTHONPATH", "")])
        cmd[3:3] = ["-p", "xform_alias_plugin"]
    out = open(f"{log}.{backend}.log", "w") if log else subprocess.DEVNULL
    # SIGINT back to its default in the child (a shell's background job ignores it, and
    # Python then installs no KeyboardInterrupt handler)
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        # interrupt rather than kill: pytest then still writes the junit report of the
        # cases it finished (a killed run would report none)
        print(f"note: {backend} run stopped after {timeout}s; counting the cases it "
              f"finished", file=sys.stderr)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if log:
        out.close()
    cases = {}
    if xml.exists() and xml.stat().st_size:
        for tc in ET.parse(xml).getroot().iter("testcase"):
            cid = f"{tc.get('classname')}::{tc.get('name')}"
            kids = {c.tag for c in tc}
            cases[cid] = ("failed" if kids & {"failure", "error"} else
                          "skipped" if "skipped" in kids else "passed")
    xml.unlink(missing_ok=True)
    return cases


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("library", choices=sorted(LIBRARIES))
    ap.add_argument("--files", nargs="*", help="test files, relative to the test root")
    ap.add_argument("--source", help="git directory of the library (for git-sourced tests)")
    ap.add_argument("--ref", help="git revision of the tests (default: the installed "
                    "version's release tag, else the closest older release)")
    ap.add_argument("--backend", choices=["jax", "xform", "both"], default="both")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per backend run")
    ap.add_argument("--json", help="write the per-case results here")
    ap.add_argument("--log", help="keep each backend's pytest output in LOG.<backend>.log")
    ap.add_argument("--pytest-args", default="", help="extra pytest arguments, one string, split as a shell would "
                    "(-k 'not slow and not big')")
    a = ap.parse_args(argv)
    dist, where, tag_pattern, default_files = LIBRARIES[a.library]
    files = a.files or default_files
    with tempfile.TemporaryDirectory() as tmp:
        if where == "package":
            root = _site_root(dist, files)
        elif where == "sdist":
            root = _sdist(dist, a.source or os.environ.get(
                f"XFORM_LIBTESTS_{a.library.upper()}"), Path(tmp))
        else:
            source = a.source or os.environ.get(f"XFORM_LIBTESTS_{a.library.upper()}")
            if not source:
                raise SystemExit(f"{a.library}'s tests are not in its wheel: pass --source "
                                 f"(a git directory of its repository)")
            root = _checkout(a.library, dist, tag_pattern, source, Path(tmp), files, a.ref)
        backends = ["jax", "xform"] if a.backend == "both" else [a.backend]
        results = {b: _run(b, root, files, a.timeout, shlex.split(a.pytest_args), a.log) for b in backends}
    by_file = {}
    for b, cases in results.items():
        for cid, status in cases.items():
            f = cid.split("::")[0]
            by_file.setdefault(f, {}).setdefault(b, {})[cid] = status
    print(f"{'test file / class':60s} {'JAX':>6s} {'xform':>6s} {'of JAX':>8s}")
    tot = [0, 0, 0]
    for f in sorted(by_file):
        j = {c for c, s in by_file[f].get("jax", {}).items() if s == "passed"}
        x = {c for c, s in by_file[f].get("xform", {}).items() if s == "passed"}
        row = [len(j), len(x), len(j & x)]
        tot = [t + r for t, r in zip(tot, row)]
        print(f"{f[-60:]:60s} {row[0]:6d} {row[1]:6d} {row[2]:8d}")
    pct = f" ({100 * tot[2] / tot[0]:.1f}%)" if tot[0] else ""
    print(f"{'total':60s} {tot[0]:6d} {tot[1]:6d} {tot[2]:8d}{pct}")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
