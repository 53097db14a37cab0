"""High-level (hijax) types and primitives (``jax.experimental.hijax``): the same
definitions made against real JAX and against xform, compared eagerly, under ``jit``,
``jvp``, ``grad``, ``vmap`` and ``scan``; what xform does not implement raises an error
naming it."""
from dataclasses import dataclass

import numpy as np
import pytest

import jax
import jax.experimental.hijax as jhjx
from jax._src import hijax as jhijax_src

import xform
import xform.experimental.hijax as xhjx


def _libs():
    return [("jax", jax, jhjx, jhijax_src.Box), ("xform", xform, xhjx, xhjx.Box)]


# -- an array-to-array HiPrimitive whose derivative is its own rule (a straight-through
#    rounding: to_lojax rounds, jvp passes the tangent through)

def _ste(lib, hjx):
    np_ = lib.numpy

    class RoundSTE(hjx.HiPrimitive):
        def abstract_eval(self, aval):
            return aval, set()

        def to_lojax(self, x):
            return np_.round(x)

        def jvp(self, primals, tangents):
            (x,), (t,) = primals, tangents
            return prim.bind(x), t

    prim = RoundSTE("round_ste")
    return prim


X = np.array([0.3, 1.6, -2.4, 2.5], np.float32)


@pytest.mark.parametrize("mode", ["eager", "jit", "jvp", "grad", "jit_grad"])
def test_hiprimitive_matches_jax(mode):
    res = {}
    for name, lib, hjx, _ in _libs():
        p = _ste(lib, hjx)
        f = lambda x: p.bind(x) * 2.0
        if mode == "eager":
            r = f(X)
        elif mode == "jit":
            r = lib.jit(f)(X)
        elif mode == "jvp":
            r = lib.jvp(f, (X,), (np.ones_like(X),))
        elif mode == "grad":
            r = lib.grad(lambda x: (f(x) ** 2).sum())(X)
        else:
            r = lib.jit(lib.grad(lambda x: (f(x) ** 2).sum()))(X)
        res[name] = r
    as_list = lambda r: list(r) if isinstance(r, tuple) else [r]
    for a, b in zip(as_list(res["jax"]), as_list(res["xform"]), strict=True):
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a))
    if mode in ("grad", "jit_grad"):
        # the user's rule, not the derivative of round (zero)
        np.testing.assert_allclose(np.asarray(res["xform"]), 8.0 * np.round(X))


def test_hiprimitive_vmap_refuses_as_jax():
    for name, lib, hjx, _ in _libs():
        p = _ste(lib, hjx)
        with pytest.raises(NotImplementedError, match="Batching rule for 'round_ste'"):
            lib.vmap(lambda x: p.bind(x))(X[:, None])


# -- an immutable high-level type (a quantized array) and primitives to and from it

def _qarray(lib, hjx):
    np_ = lib.numpy

    class QArray:
        def __init__(self, arr, scale):
            self.arr, self.scale = arr, scale

    @dataclass(frozen=True)
    class QArrayTy(hjx.HiType):
        shape: tuple

        def lo_ty(self):
            m, k = self.shape
            return [hjx.ShapedArray((m, k), np.dtype("int8")),
                    hjx.ShapedArray((m,), np.dtype("float32"))]

        def lower_val(self, q):
            return [q.arr, q.scale]

        def raise_val(self, arr, scale):
            return QArray(arr, scale)

        def to_tangent_aval(self):
            return self

    hjx.register_hitype(QArray, lambda q: QArrayTy(q.arr.shape))

    class ToQ(hjx.HiPrimitive):
        def abstract_eval(self, a):
            return QArrayTy(a.shape), set()

        def to_lojax(self, x):
            scale = x.max(1) / 32.0
            return QArray((x / scale[:, None]).astype("int8"), scale)

        def jvp(self, p, t):
            return to_q.bind(p[0]), to_q.bind(t[0])

        def transpose(self, ct, _):
            return [from_q.bind(ct)]

    class FromQ(hjx.HiPrimitive):
        def abstract_eval(self, a):
            return hjx.ShapedArray(a.shape, np.dtype("float32")), set()

        def to_lojax(self, q):
            return q.arr.astype("float32") * q.scale[:, None]

        def jvp(self, p, t):
            return from_q.bind(p[0]), from_q.bind(t[0])

        def transpose(self, ct, _):
            return [to_q.bind(ct)]

    to_q, from_q = ToQ("to_q"), FromQ("from_q")
    return to_q, from_q


XQ = np.random.RandomState(0).randn(3, 4).astype(np.float32) + 2


def test_hitype_eager_jit_jvp_match_jax():
    out = {}
    for name, lib, hjx, _ in _libs():
        to_q, from_q = _qarray(lib, hjx)
        f = lambda x: from_q.bind(to_q.bind(x))
        q = lib.jit(to_q.bind)(XQ)                 # a high-level result of jit
        out[name] = [f(XQ), lib.jit(f)(XQ), lib.jit(from_q.bind)(q), q.arr, q.scale,
                     *lib.jvp(f, (XQ,), (np.full_like(XQ, 0.5),))]
        assert type(q).__name__ == "QArray"
    for a, b in zip(out["jax"], out["xform"]):
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a))


def test_hitype_grad_through_transpose_rule_refuses():
    to_q, from_q = _qarray(xform, xhjx)
    with pytest.raises(NotImplementedError, match="to_q.*transpose rule"):
        xform.grad(lambda x: from_q.bind(to_q.bind(x)).sum())(XQ)


# -- a mutable high-level type: Box (JAX's jax._src.hijax.Box)

def _box_results(lib, Box):
    np_ = lib.numpy
    out = []
    b = Box(np_.array(1.0))
    b.set(b.get() + 1.0)
    out.append(b.get())

    @lib.jit
    def f(b, x):                        # a box argument, mutated
        b.set(b.get() * x)
        return b.get() + 1.0
    out += [f(b, 3.0), b.get(), f(b, 3.0), b.get()]

    @lib.jit
    def fd(dct, x):                     # a box among other leaves of a pytree
        box = dct["box"]
        box.set(box.get() + x + dct["a"])
    for init in (1.0, 2.0, 3):          # (the third one an int: a new layout)
        bb = Box(init)
        fd({"a": 10.0, "box": bb, "c": 100.0}, 2.0)
        out.append(bb.get())

    c = Box(np_.array(2.0))

    @lib.jit
    def g(x):                           # a closed-over box, mutated
        c.set(c.get() + x)
        return x * 2.0
    out += [g(1.0), c.get(), g(1.0), c.get()]

    d = Box(np_.array(1.0))

    @lib.jit
    def h(d):                           # the box's type changes inside jit
        d.set((d.get(), np_.ones(3)))
    h(d)
    out += list(d.get())

    e = Box(np_.array(0.0))

    def body(carry, x):
        e.set(e.get() + x)
        return carry + e.get(), None
    out += [lib.lax.scan(body, 0.0, np_.arange(4.0))[0], e.get()]

    k = Box(np_.array(0.0))

    def loss(x):                        # grad of a function writing a closed-over box
        k.set(lib.lax.stop_gradient(x * 3.0))
        return x ** 2 + k.get()
    out += [lib.grad(loss)(4.0), k.get()]

    tc = Box(None)
    tc2 = Box(None)

    @lib.jit
    def changes():                      # closed-over boxes whose types change
        x = tc.get()
        if x is None:
            tc.set(0)
        elif type(x) is dict:
            tc.set(dict(x, a=5))
            tc2.set(3)
        else:
            tc.set(x + 1)
    for _ in range(3):
        changes()
    out.append(tc.get())
    tc.set({"b": 3})
    changes()
    out += [tc.get()["a"], tc.get()["b"], tc2.get()]

    nb = Box([])

    @lib.jit
    def outer():                        # a nested jit changes a box the outer one adopted
        @lib.jit
        def inner():
            nb.set(nb.get() + [1.0])
        inner()
        inner()
    outer()
    out.append(np_.asarray(nb.get()))

    for jit in (False, True):           # a box and its tangent box as jvp arguments
        def fj(box, x):
            box.set(box.get() + x)
            return x * 3.0
        fj = lib.jit(fj) if jit else fj
        bp, bt = Box(5.0), Box(1.0)
        out += [*lib.jvp(fj, (bp, 2.0), (bt, 1.0)), bp.get(), bt.get()]

    m = Box(np_.array(5.0))
    out.append(lib.vmap(lambda x: x * m.get())(np_.arange(3.0)))   # read under vmap
    out.append(lib.jvp(lambda x: x * m.get(), (2.0,), (1.0,))[1])
    return out


def test_box_matches_jax():
    want = _box_results(jax, jhijax_src.Box)
    got = _box_results(xform, xhjx.Box)
    assert len(want) == len(got)
    for i, (a, b) in enumerate(zip(want, got)):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), err_msg=f"result {i}")


def test_box_isinstance_and_eval_shape():
    b = xhjx.Box(xform.numpy.ones(2))
    assert isinstance(b, xhjx.Box)
    assert xform.typeof(b) == xhjx.BoxTy()

    def f(b):
        b.set(b.get() * 2)
        return b.get().sum()
    s = xform.eval_shape(f, b)
    assert s.shape == () and s.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(b.get()), np.ones(2))   # nothing ran


def test_box_errors():
    b = xhjx.Box(xform.numpy.ones(2))

    @xform.jit
    def ret(b):
        return b
    with pytest.raises(TypeError, match="mutable high-level value cannot be returned"):
        ret(b)

    c = xhjx.Box([1.0])

    def body(i):
        c.set(c.get() * 2)              # a list twice as long: a new type
        return i + 1
    with pytest.raises(TypeError, match="type-changing mutations not allowed in "
                                        "while_loop body"):
        xform.lax.while_loop(lambda i: i < 5, body, 0)
    assert c.get() == [1.0]                                # left as it was

    with pytest.raises(Exception, match="can't differentiate Box.set"):
        xform.grad(lambda x: (xhjx.box_set(xhjx.Box(0.0), x), x)[1])(1.0)


# -- a new-style VJPHiPrimitive (expand, vjp_fwd/vjp_bwd, jvp)

def _power(lib, hjx, accumulate):
    class Power(hjx.VJPHiPrimitive):
        def __init__(self, in_aval, *, power):
            self.in_avals = (in_aval,)
            self.out_aval = in_aval
            self.params = dict(power=power)
            super().__init__()

        def expand(self, x):
            return x ** self.power

        def vjp_fwd(self, nzs_in, x):
            return self(x), x

        if accumulate:
            def vjp_bwd(self, res, t, xbar_accum):
                # (3x the true derivative: the rule is what is used, not expand's)
                xbar_accum.accum(3.0 * t * self.power * res ** (self.power - 1))
        else:
            def vjp_bwd_retval(self, res, t):
                return (3.0 * t * self.power * res ** (self.power - 1),)

        def jvp(self, primals, tangents):
            (x,), (t,) = primals, tangents
            return self(x), 5.0 * t * self.power * x ** (self.power - 1)

        def batch(self, axis_data, args, in_dims):
            (x,), (d,) = args, in_dims
            return Power(lib.typeof(x), power=self.power)(x), d

    return lambda x: Power(lib.typeof(x), power=3)(x)


@pytest.mark.parametrize("accumulate", [True, False])
def test_vjp_hiprimitive_matches_jax(accumulate):
    res = {}
    xs = np.arange(3.0, dtype=np.float32)
    for name, lib, hjx, _ in _libs():
        f = _power(lib, hjx, accumulate)
        res[name] = [f(2.0), lib.jit(f)(2.0), lib.vmap(f)(xs), lib.grad(f)(2.0),
                     lib.jit(lib.grad(f))(2.0), *lib.jvp(f, (2.0,), (1.0,))]
    for i, (a, b) in enumerate(zip(res["jax"], res["xform"], strict=True)):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), err_msg=f"result {i}")
    assert float(res["xform"][3]) == 36.0 and float(res["xform"][6]) == 60.0


def test_vjp_hiprimitive_checks_as_jax():
    class Both(xhjx.VJPHiPrimitive):
        def __init__(self):
            self.in_avals, self.out_aval, self.params = (), (), {}
            super().__init__()

        def vjp_bwd(self, res, g):
            pass

        def vjp_bwd_retval(self, res, g):
            pass
    with pytest.raises(AttributeError, match="should not override both"):
        Both()


# rows whose maximum is 32 and entries integers: quantizing them is exact (scale 1), so
# no rounding at an int8 boundary depends on how XLA rewrites the division
XQI = np.array([[1., 5., 32., 7.], [32., 2., 3., 4.], [9., 32., 16., 8.]], np.float32)


def test_hitype_loop_carry_and_cond_operand_match_jax():
    res = {}
    for name, lib, hjx, Box in _libs():
        to_q, from_q = _qarray(lib, hjx)
        np_ = lib.numpy
        out = []
        for jit in (False, True):
            def f(q1):
                def body(c):
                    i, qc = c
                    return i + 1, to_q.bind(from_q.bind(qc))
                n, q_out = lib.lax.while_loop(lambda c: c[0] < 2, body, (0, q1))
                return n, from_q.bind(q_out)
            f = lib.jit(f) if jit else f
            out += list(f(to_q.bind(np_.asarray(XQI))))

            def g(x):
                b = Box(x)                      # a box as a cond operand
                lib.lax.cond(x > 0, lambda box: box.set(box.get() + 1.0),
                             lambda _: None, b)
                q = to_q.bind(np_.ones((2, 2)) * x)    # an immutable one
                return b.get(), lib.lax.cond(x > 0, lambda q: from_q.bind(q).sum(),
                                             lambda q: 0.0, q)
            g = lib.jit(g) if jit else g
            out += list(g(1.0)) + list(g(-1.0))
        res[name] = out
    for i, (a, b) in enumerate(zip(res["jax"], res["xform"], strict=True)):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), err_msg=f"result {i}")


def test_vjp_hiprimitive_is_told_which_inputs_are_perturbed_as_jax():
    seen = {}
    for name, lib, hjx, _ in _libs():
        log = seen[name] = []

        class Mul(hjx.VJPHiPrimitive):
            def __init__(self, aval):
                self.in_avals, self.out_aval, self.params = (aval, aval), aval, {}
                super().__init__()

            def expand(self, x, y):
                return x * y

            def vjp_fwd(self, nzs_in, x, y):
                log.append(tuple(bool(n) for n in nzs_in))
                return self(x, y), (x, y)

            def vjp_bwd_retval(self, res, g):
                x, y = res
                return (g * y, x * g)

        mul = lambda x, y: Mul(lib.typeof(x))(x, y)
        log.append(float(lib.grad(mul)(2.0, 3.0)))
        log.append(float(lib.grad(mul, 1)(2.0, 3.0)))
    assert seen["xform"] == seen["jax"]


def test_box_ahead_of_time_matches_jax():
    res = {}
    for name, lib, hjx, Box in _libs():
        box = Box(1.0)

        @lib.jit
        def f(box, x):
            box.set(box.get() + x)
            return x * 2.0
        assert "module" in f.lower(box, 1.0).as_text()
        compiled = f.lower(box, 1.0).compile()
        outs = [compiled(box, 1.0), compiled(box, 2.0), box.get()]
        res[name] = outs
    for a, b in zip(res["jax"], res["xform"], strict=True):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a))


@pytest.mark.parametrize("mode", ["grad_of_jit", "jvp_of_jit", "grad_of_scan"])
def test_hiprimitive_rule_used_when_staged_program_is_differentiated(mode):
    res = {}
    for name, lib, hjx, _ in _libs():
        p = _ste(lib, hjx)
        f = lambda x: p.bind(x) * 2.0
        if mode == "grad_of_jit":
            r = lib.grad(lambda x: (lib.jit(f)(x) ** 2).sum())(X)
        elif mode == "jvp_of_jit":
            r = lib.jvp(lib.jit(f), (X,), (np.ones_like(X),))[1]
        else:
            def loss(x):
                c, _ = lib.lax.scan(lambda c, _: (c + f(x).sum(), None), 0.0, None,
                                    length=2)
                return c
            r = lib.grad(loss)(X)
        res[name] = r
    np.testing.assert_array_equal(np.asarray(res["xform"]), np.asarray(res["jax"]))
    assert np.any(np.asarray(res["xform"]) != 0)     # the rule, not round's derivative


def test_a_closed_over_box_is_not_kept_alive_by_its_mirror():
    """A traced body that reaches an outside box reads it through a mirror; the mirror
    table must not keep the box (and its arrays) alive after the user drops it."""
    import gc
    import weakref
    from xform._src.interpreters import hijax as engine
    from xform.experimental.hijax import Box
    e = Box(xform.numpy.array(0.0))

    def body(carry, x):
        e.set(e.get() + x)
        return carry + e.get(), None
    total, _ = xform.lax.scan(body, 0.0, xform.numpy.arange(4.0))
    assert float(total) == 0 + 1 + 3 + 6 and float(e.get()) == 6.0
    assert id(e) in engine._top_mirrors
    alive, key = weakref.ref(e), id(e)
    del e, body
    gc.collect()
    assert alive() is None
    assert key not in engine._top_mirrors
