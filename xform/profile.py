"""``xform.profile``: the dispatch-tax report (overhead ratio and compile break-even).

Eager execution pays a host "dispatch tax" on every primitive (Python
dispatch, type checks, a kernel launch).  Whether that tax matters depends on
how much device work each op does, modelled as

    overhead ratio = N_ops * t_dispatch / (T_compute + T_memory)

(above 1 the workload is overhead-bound and staging pays most) and whether
compiling pays back within a run as

    break-even N = T_compile / (T_eager - T_compiled)

``dispatch_report(f, *args)`` fills both in with *measured* numbers for one
function: N_ops from its staged program, t_dispatch from timing a trivial
eager op, T_eager and T_compiled from timing eager and jitted calls, T_compile
from a fresh ``jit(f).lower(*args).compile()``, and T_compute / T_memory from
XLA's cost analysis (flops, bytes accessed) divided by a device profile's peak
FLOP/s and memory bandwidth.  The arithmetic lives in the small pure functions
``overhead_ratio``, ``break_even`` and ``device_time`` so it can be checked
against worked examples (``tests/test_profile.py``).

Device profiles are *models*, not measurements of the device that ran the
program: ``CPU`` is a documented default for the 2-core AVX2/AVX-512 x86 VM
this project develops on, ``A100`` a data-sheet accelerator, and
``calibrate_cpu()`` measures this host (NumPy matmul rate, large-copy
bandwidth) when a closer figure is wanted.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
import time

import numpy as np
from xform.tree_util import tree_leaves

__all__ = ["DeviceProfile", "CPU", "A100", "H100", "DispatchReport", "dispatch_report",
           "overhead_ratio", "break_even", "device_time", "count_ops", "measure_dispatch",
           "calibrate_cpu", "compile_tiers"]


# ----------------------------------------------------------------- device models


@dataclasses.dataclass(frozen=True)
class DeviceProfile:
    """Peak FP32 FLOP/s and memory bandwidth (bytes/s) used to turn XLA's cost
    analysis into a roofline estimate of device time."""
    name: str
    peak_flops: float
    bandwidth: float
    note: str = ""

    def __post_init__(self):
        for field in ("peak_flops", "bandwidth"):
            v = getattr(self, field)
            if not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
                raise ValueError(f"DeviceProfile.{field} must be a positive finite number, "
                                 f"got {v!r}")


#: 2 cores x 3.0 GHz x 32 FP32 FLOP/cycle (two 8-wide FMA pipes) and ~20 GB/s of DRAM
#: bandwidth: a deliberately round figure for the 2-core x86 development VM.
CPU = DeviceProfile("cpu (2-core x86 default)", 2 * 3.0e9 * 32, 20e9,
                    "2 cores x 3.0 GHz x 32 FP32 FLOP/cycle; 20 GB/s DRAM")
#: NVIDIA A100 40GB data sheet: 19.5 TFLOP/s FP32 (non-tensor-core), 1555 GB/s HBM2.
A100 = DeviceProfile("A100-40GB (fp32)", 19.5e12, 1.555e12,
                     "data sheet: 19.5 TFLOP/s FP32, 1555 GB/s HBM2")
#: NVIDIA H100 SXM data sheet: 67 TFLOP/s FP32, 3.35 TB/s HBM3.
H100 = DeviceProfile("H100-SXM (fp32)", 67e12, 3.35e12,
                     "data sheet: 67 TFLOP/s FP32, 3.35 TB/s HBM3")


def calibrate_cpu(n: int = 768, copy_mb: int = 64) -> DeviceProfile:
    """A profile measured on this host: best-of-5 NumPy f32 matmul rate and
    large-array copy bandwidth (read + write bytes).  ~0.1-0.5 s."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    a @ b
    t_mm = min(_time_once(lambda: a @ b) for _ in range(5))
    src = rng.standard_normal(copy_mb * 2**20 // 4, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    t_cp = min(_time_once(lambda: np.copyto(dst, src)) for _ in range(5))
    return DeviceProfile("cpu (calibrated)", 2 * n**3 / t_mm, 2 * src.nbytes / t_cp,
                         f"NumPy {n}x{n} f32 matmul and {copy_mb} MB copy on this host")


def _time_once(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# ----------------------------------------------------------------- the arithmetic (pure)


def _nonneg(name, v):
    try:
        v = float(v)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {type(v).__name__}") from None
    if not v >= 0:
        raise ValueError(f"{name} must be >= 0, got {v}")
    return v


def overhead_ratio(n_ops, t_dispatch, t_compute, t_memory) -> float:
    """The overhead ratio N_ops * t_dispatch / (T_compute + T_memory); inf when there
    is no device time.  Times in seconds.  E.g. 6 ops at 15 us of dispatch each over
    2.6 us of device time: 6 * 15e-6 / 2.6e-6 = 34.6."""
    n_ops = _nonneg("n_ops", n_ops)
    t_dispatch = _nonneg("t_dispatch", t_dispatch)
    device = _nonneg("t_compute", t_compute) + _nonneg("t_memory", t_memory)
    tax = n_ops * t_dispatch
    if device == 0:
        return math.inf if tax > 0 else 0.0
    return tax / device


def break_even(t_compile, t_eager, t_compiled) -> float:
    """The break-even N: runs needed before compiling pays, T_compile / (T_eager -
    T_compiled); inf when the compiled step is not faster.  E.g. a 30 s compile that
    takes a step from 1450 to 2150 images/s: 30 s / (1/1450 - 1/2150) s ~ 134,000."""
    t_compile = _nonneg("t_compile", t_compile)
    saved = _nonneg("t_eager", t_eager) - _nonneg("t_compiled", t_compiled)
    return t_compile / saved if saved > 0 else math.inf


def device_time(flops, bytes_accessed, profile: DeviceProfile = CPU) -> tuple[float, float]:
    """(T_compute, T_memory) in seconds: flops / peak FLOP/s, bytes / bandwidth."""
    if not isinstance(profile, DeviceProfile):
        raise TypeError(f"profile must be a DeviceProfile (e.g. xform.profile.A100), got "
                        f"{type(profile).__name__}")
    return (_nonneg("flops", flops) / profile.peak_flops,
            _nonneg("bytes_accessed", bytes_accessed) / profile.bandwidth)


# ----------------------------------------------------------------- measurements


def count_ops(jaxpr) -> int:
    """Equations in a (Closed)Jaxpr, counted recursively: a higher-order equation
    (jit, scan, cond, custom_jvp, checkpoint...) counts itself plus its bodies."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    n = 0
    for eqn in jaxpr.eqns:
        n += 1
        for v in eqn.params.values():
            for sub in (v if isinstance(v, (tuple, list)) else (v,)):
                if hasattr(sub, "eqns") or hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    n += count_ops(sub)
    return n


def _block(out):
    for leaf in tree_leaves(out):
        b = getattr(leaf, "block_until_ready", None)
        if b is not None:
            b()
    return out


def _per_call(fn, n_iter, rounds=3):
    """Median over ``rounds`` of the mean time of ``n_iter`` blocked calls (s)."""
    fn()  # warm-up, outside the timed region
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n_iter):
            fn()
        times.append((time.perf_counter() - t0) / n_iter)
    return statistics.median(times)


def measure_dispatch(n_iter: int = 2000, device: bool = False) -> float:
    """Measured eager per-op dispatch cost (s): ``x + x`` on f32[1], where the
    work is negligible, so the time is the tax.  ``device=True`` times arrays
    placed on the default XLA device (one cached executable per op) instead of
    host arrays (NumPy reference kernels)."""
    import xform  # deferred: import cycle
    x = np.asarray([1.5], np.float32)
    x = xform.device_put(x) if device else xform.numpy.asarray(x)
    return _per_call(lambda: (x + x).block_until_ready(), n_iter)


_fresh_names = itertools.count()


@dataclasses.dataclass
class DispatchReport:
    """Measured dispatch tax of one function; ``print(report)`` for a table,
    ``report.as_dict()`` for JSON."""
    name: str
    n_ops: int
    t_dispatch: float
    t_eager: float
    t_jit: float
    t_compile: float
    flops: float
    bytes_accessed: float
    t_compute: float
    t_memory: float
    overhead_ratio: float
    break_even: float
    profile: DeviceProfile

    @property
    def eager_per_op(self) -> float:
        return self.t_eager / self.n_ops if self.n_ops else math.nan

    @property
    def overhead_fraction(self) -> float:
        """Share of an eager step that is tax under the model: tax / (tax + device)."""
        tax = self.n_ops * self.t_dispatch
        total = tax + self.t_compute + self.t_memory
        return tax / total if total else math.nan

    def as_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
             if f.name != "profile"}
        d["profile"] = dataclasses.asdict(self.profile)
        d["eager_per_op"] = self.eager_per_op
        d["overhead_fraction"] = self.overhead_fraction
        d["eager_over_jit"] = self.t_eager / self.t_jit if self.t_jit else math.nan
        return d

    def __str__(self):
        us = lambda s: f"{s * 1e6:,.2f} us"  # noqa: E731
        be = "inf (compiled is not faster)" if math.isinf(self.break_even) \
            else f"{self.break_even:,.0f} calls"
        rows = [
            ("N_ops (staged equations, recursive)", f"{self.n_ops}"),
            ("t_dispatch (eager tax per op, measured)", us(self.t_dispatch)),
            ("eager time per call", us(self.t_eager)),
            ("  = per op", us(self.eager_per_op)),
            ("jit time per call", us(self.t_jit)),
            ("  eager / jit", f"{self.t_eager / self.t_jit:,.1f}x" if self.t_jit else "n/a"),
            ("XLA cost: flops", f"{self.flops:,.0f}"),
            ("XLA cost: bytes accessed", f"{self.bytes_accessed:,.0f}"),
            (f"T_compute ({self.profile.name})", us(self.t_compute)),
            (f"T_memory  ({self.profile.name})", us(self.t_memory)),
            ("overhead ratio N*t_dispatch/(Tc+Tm)", f"{self.overhead_ratio:,.1f}"
             + ("  (overhead-bound)" if self.overhead_ratio > 1 else "  (work-bound)")),
            ("  tax share of an eager step (model)", f"{100 * self.overhead_fraction:.1f} %"),
            ("compile time (trace+lower+XLA)", f"{self.t_compile * 1e3:,.2f} ms"),
            ("break-even N = Tc/(T_eager-T_jit)", be),
        ]
        w = max(len(k) for k, _ in rows)
        lines = [f"dispatch report: {self.name}"] + [f"  {k:<{w}}  {v}" for k, v in rows]
        return "\n".join(lines)


def dispatch_report(f, *args, n_iter: int = 100, profile: DeviceProfile = CPU,
                    t_dispatch: float | None = None, name: str | None = None) -> DispatchReport:
    """Measure ``f``'s dispatch tax on ``args`` (see the module docstring).

    ``n_iter``: calls per timing round (3 rounds, median).  ``profile``: the
    device model for T_compute/T_memory (``CPU``, ``A100``, ``H100``,
    ``calibrate_cpu()`` or your own ``DeviceProfile``).  ``t_dispatch``: use
    this per-op tax (s) instead of measuring ``measure_dispatch()``.
    """
    import xform  # deferred: import cycle
    if not callable(f):
        raise TypeError(f"dispatch_report expects a callable, got {type(f).__name__}")
    if not isinstance(n_iter, int) or n_iter < 1:
        raise ValueError(f"n_iter must be a positive int, got {n_iter!r}")
    if not isinstance(profile, DeviceProfile):
        raise TypeError(f"profile must be a DeviceProfile (e.g. xform.profile.A100), got "
                        f"{type(profile).__name__}")
    name = name or getattr(f, "__name__", type(f).__name__)
    n_ops = count_ops(xform.make_jaxpr(f)(*args))

    # A fresh function with a unique name: a new jit cache entry and new MLIR text,
    # so neither the trace cache nor the executable cache hides the compile time.
    def fresh(*a):
        return f(*a)
    fresh.__name__ = f"dispatch_report_{next(_fresh_names)}"
    t0 = time.perf_counter()
    compiled = xform.jit(fresh).lower(*args).compile()
    t_compile = time.perf_counter() - t0
    cost = compiled.cost_analysis() or {}
    if isinstance(cost, (list, tuple)):  # older jaxlib: one dict per computation
        cost = cost[0] if cost else {}
    flops = max(float(cost.get("flops", 0.0)), 0.0)
    nbytes = max(float(cost.get("bytes accessed", 0.0)), 0.0)

    jf = xform.jit(fresh)
    t_jit = _per_call(lambda: _block(jf(*args)), n_iter)
    t_eager = _per_call(lambda: _block(f(*args)), n_iter)
    if t_dispatch is None:
        t_dispatch = measure_dispatch()
    t_c, t_m = device_time(flops, nbytes, profile)
    return DispatchReport(name=name, n_ops=n_ops, t_dispatch=float(t_dispatch),
                          t_eager=t_eager, t_jit=t_jit, t_compile=t_compile, flops=flops,
                          bytes_accessed=nbytes, t_compute=t_c, t_memory=t_m,
                          overhead_ratio=overhead_ratio(n_ops, t_dispatch, t_c, t_m),
                          break_even=break_even(t_compile, t_eager, t_jit), profile=profile)


# ----------------------------------------------------------------- tiered compilation


def compile_tiers(jitted, *args, wait: float | None = 0, **kwargs) -> dict:
    """Which compilation tier ``jitted`` (an ``xform.jit`` function) runs for these
    arguments, and the compile time of each tier.

    With ``xform.config.update("xform_tiered_compilation", True)`` a program's first
    call compiles XLA's quick tier and runs it while the optimized tier compiles in a
    background thread (docs/performance.md).  Returns ``{"tier": "quick" |
    "optimized" | None (not compiled yet), "compile_s": {"quick": s | None,
    "optimized": s | None}, "pending": bool, "error": str | None}``; a tier's time is
    None when it was not compiled for this program here (the optimized one came from a
    cache, or tiering was off).  ``wait``: seconds to wait for a pending optimized
    tier first (None: until it is ready)."""
    lower = getattr(jitted, "lower", None)
    if lower is None:
        raise TypeError(f"compile_tiers takes a function made by xform.jit, got {jitted!r}")
    compiled = lower(*args, **kwargs)._entry.compiled
    compiled = getattr(compiled, "inner", compiled)      # typed PRNG keys: the wrapped one
    if compiled is None:
        return {"tier": None, "compile_s": {"quick": None, "optimized": None},
                "pending": False, "error": None}
    info = getattr(compiled, "tier_info", None)
    if info is None:                 # interpreted (no XLA lowering) or partitioned
        return {"tier": None, "compile_s": {"quick": None, "optimized": None},
                "pending": False, "error": f"not an XLA executable: {type(compiled).__name__}"}
    if wait != 0:
        compiled.wait_optimized(wait)
    return info()
