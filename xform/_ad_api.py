"""Automatic differentiation, user-facing: jvp, linearize, vjp, grad, jacobians.

Everything here is argument handling around three engine entry points in
``interpreters/ad.py``: ``jvp_flat`` (forward mode), ``linearize_flat``
(forward mode + partial evaluation: primal values now, a linear program over
tangents) and ``LinearFunction.transpose`` (reverse mode).  Pytrees are
flattened on the way in and rebuilt on the way out; misuse raises JAX's error
types with JAX's messages.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from xform._wrapping import wraps as _wraps
from xform._src.interpreters import refs as _refs
from xform._src.interpreters import ad, core, dtypes
from xform._src.interpreters.ad import Zero, float0
from xform._src.interpreters.core import Array, Tracer
from xform._src.interpreters.staging import trace_to_jaxpr
from xform._src.interpreters.hijax import hi_type as _hi_type
from xform.tree_util import tree_flatten, tree_map, tree_structure, tree_unflatten
from xform._src.interpreters.ir import ClosedJaxpr
from xform._src.interpreters.ir import Jaxpr, Literal
from xform._src.primitives import structural
from xform._src.primitives.elementwise import convert_element_type_p
from xform._vmap import vmap

__all__ = ["jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev",
           "jacobian", "hessian", "linear_transpose"]


class ArgnumsError(TypeError, ValueError):
    """argnums out of range (a TypeError in JAX; also a ValueError for convenience)."""


# ----------------------------------------------------------------- argument helpers


def as_value(x):
    """A leaf as something the engine binds: Arrays and tracers pass through; Python
    scalars and NumPy values become Arrays of the canonical dtype."""
    if isinstance(x, (Tracer, Array)):
        return x
    t = type(x)
    if t in (int, float, complex, bool):
        aval = core.get_aval(x)
        return Array(np.asarray(x, aval.dtype), aval.weak_type)
    if isinstance(x, (np.ndarray, np.generic)):
        if x.dtype == float0:
            return np.asarray(x)
        dt = dtypes.canonicalize_dtype(x.dtype)
        return Array(np.array(x, dt))
    if hasattr(x, "__array__") and hasattr(x, "dtype"):  # e.g. a jax.Array in tests
        v = np.asarray(x)
        return Array(np.array(v, dtypes.canonicalize_dtype(v.dtype)))
    raise TypeError(f"Argument {x!r} of type {type(x).__name__} is not a valid xform type: "
                    "differentiable arguments must be arrays, scalars or pytrees of them.")


def _leaves(tree, what):
    leaves, treedef = tree_flatten(tree)
    return [_as_value_in(x, what) for x in leaves], treedef


def _as_value_in(x, what):
    if what.startswith("jvp") and _hi_type(x) is not None:
        return x          # a high-level value: its type's jvp rules differentiate it
    try:
        return as_value(x)
    except TypeError as e:
        raise TypeError(f"{what}: {e}") from None


def _dtype(x):
    if isinstance(x, np.ndarray) and x.dtype == float0:
        return float0
    return core.get_aval(x).dtype


def _check_callable(fun, name):
    if not callable(fun):
        raise TypeError(f"{name} requires a callable as its first argument, got {fun!r} "
                        f"of type {type(fun).__name__}.")


def _norm_argnums(argnums, name):
    if isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool):
        return int(argnums)
    if isinstance(argnums, (tuple, list)) and all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in argnums):
        if not argnums:
            raise ValueError(f"{name}: argnums must be a non-empty int or tuple of ints")
        return tuple(int(a) for a in argnums)
    raise TypeError(f"{name}: argnums must be an int or a tuple of ints, got {argnums!r}")


def _dyn_args(name, argnums, args, kwargs, fun):
    """(f_partial, dyn_args) with the differentiated positional args pulled out."""
    nums = (argnums,) if isinstance(argnums, int) else argnums
    n = len(args)
    for a in nums:
        if not -n <= a < n:
            raise ArgnumsError(
                f"{name}: differentiating with respect to argnums={argnums} requires at least "
                f"{max(nums) + 1} positional arguments to be passed by the caller, but got "
                f"only {n} positional arguments.")
    nums = tuple(a % n for a in nums)

    def f_partial(*dyn):
        full = list(args)
        for i, v in zip(nums, dyn):
            full[i] = v
        return fun(*full, **kwargs)
    return f_partial, tuple(args[i] for i in nums)


_PY_SCALARS = (bool, int, float, complex)


def _flat_fun(fun, in_tree, out_store, has_aux=False, keep_py_scalars=False):
    """Flat-argument version of ``fun``; stores the output treedef (and aux)."""
    def flat(*leaves):
        args = tree_unflatten(in_tree, leaves)
        with _refs.Scope("autodiff") as scope:
            out = fun(*args)
        if scope.order:         # it used references of its caller
            _refs.discharge_transform(scope)
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError("has_aux=True requires the function to return a pair "
                                f"(output, aux), but it returned {_short(out)}.")
            out, aux = out
            # aux values leave the differentiation as their primal values (as JAX)
            tr = core.current_trace()
            if isinstance(tr, ad.JVPTrace):
                aux = tree_map(lambda x: tr.unpack(x)[0] if isinstance(x, core.Tracer) else x,
                               aux)
            out_store["aux"] = aux
        out_leaves, out_tree = tree_flatten(out)
        out_store["tree"] = out_tree
        if keep_py_scalars:   # an output that never met a tracer stays as it is (jvp)
            return [o if type(o) in _PY_SCALARS else _as_value_in(o, "function output")
                    for o in out_leaves]
        return [_as_value_in(o, "function output") for o in out_leaves]
    return flat


def _short(x):
    s = repr(x)
    return s if len(s) < 200 else s[:200] + "..."


def _zeros(aval):
    if aval.dtype == float0:
        return np.zeros(aval.shape, float0)
    return ad.instantiate(Zero(aval))


def _instantiate(t):
    return _zeros(t.aval) if type(t) is Zero else t


# ----------------------------------------------------------------- jvp


def _check_tangent(p, t):
    pd = core.get_aval(p).dtype
    td = _dtype(t)
    expected = ad.tangent_aval(core.get_aval(p)).dtype
    if td != expected:
        raise TypeError(
            "primal and tangent arguments to xform.jvp do not match (they must have equal "
            "types); dtypes must be equal, or in case of int/bool primal dtype the tangent "
            f"dtype must be float0. Got primal dtype {pd.name} and so expected tangent "
            f"dtype {expected.name}, but got tangent dtype {td.name} instead.")
    ps, ts = tuple(np.shape(p)), tuple(np.shape(t))
    if ps != ts:
        raise ValueError("jvp called with different primal and tangent shapes; "
                         f"Got primal shape {ps} and tangent shape as {ts}")


def jvp(fun, primals, tangents, has_aux=False):
    """Forward mode: ``(fun(*primals), d fun(primals)[tangents])``."""
    _check_callable(fun, "jvp")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to xform.jvp must be tuples or lists; "
                        f"found {type(primals).__name__} and {type(tangents).__name__}.")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError("primal and tangent arguments to xform.jvp must have the same tree "
                        f"structure; primals have tree structure {p_tree} whereas tangents "
                        f"have tree structure {t_tree}.")
    py_in = p_leaves
    p_leaves = [_as_value_in(p, "jvp primal") for p in p_leaves]
    t_vals = []
    for p, t in zip(p_leaves, t_leaves):
        t = _as_value_in(t, "jvp tangent") if not (
            isinstance(t, np.ndarray) and t.dtype == float0) else t
        if _hi_type(p) is not None:
            t_vals.append(t)
            continue
        _check_tangent(p, t)
        t_vals.append(Zero(ad.tangent_aval(core.get_aval(p))) if _dtype(t) == float0 else t)
    # Python-scalar primals travel as such too (a custom_jvp rule gets them, an output
    # that is one comes back as one), as in JAX
    py = [(x, t_raw if type(t_raw) in _PY_SCALARS else t) if type(x) in _PY_SCALARS
          else None for x, t_raw, t in zip(py_in, t_leaves, t_vals)]
    # a Python scalar without a tangent (an integer's float0) reaches fun as it is
    p_leaves = [x if q is not None and type(t) is Zero else p
                for x, q, t, p in zip(py_in, py, t_vals, p_leaves)]
    store = {}
    flat = _flat_fun(fun, p_tree, store, has_aux, keep_py_scalars=True)
    outs, touts = ad.jvp_flat(flat, p_leaves, t_vals, py)
    out_tree = store["tree"]
    res = (tree_unflatten(out_tree, outs),
           tree_unflatten(out_tree, [_instantiate_like(t, o) for t, o in zip(touts, outs)]))
    return res + (store["aux"],) if has_aux else res


def _instantiate_like(t, primal):
    """A zero tangent made an array, weakly typed when its primal is (as JAX's jvp)."""
    if type(t) is not Zero or t.aval.dtype == float0:
        return _instantiate(t)
    return Array(np.zeros(t.aval.shape, t.aval.dtype), core.get_aval(primal).weak_type)


# ----------------------------------------------------------------- linearize


class LinearizedFunction:
    """``f_jvp`` returned by ``linearize``: call it with tangents shaped like the primals.

    ``.jaxpr`` is the linear program (its constants are the residuals) and printing
    the object shows it; ``.num_residuals`` / ``.residual_bytes`` measure what
    the forward pass saved.
    """

    def __init__(self, lin: ad.LinearFunction, in_tree, out_tree, name="f_jvp"):
        self._lin = lin
        self._in_tree = in_tree
        self._out_tree = out_tree
        self.__name__ = name

    jaxpr = property(lambda self: self._lin.jaxpr)
    residuals = property(lambda self: self._lin.residuals)
    num_residuals = property(lambda self: self._lin.num_residuals)
    residual_bytes = property(lambda self: self._lin.residual_bytes)

    def __call__(self, *tangents):
        leaves, tree = tree_flatten(tangents)
        if tree != self._in_tree:
            raise TypeError(f"linearized function expects tangents with tree structure "
                            f"{self._in_tree}, got {tree}.")
        vals = []
        for a, t in zip(self._lin.in_avals, leaves):
            if isinstance(t, np.ndarray) and t.dtype == float0:
                vals.append(Zero(a))
                continue
            t = _as_value_in(t, "tangent")
            ta = core.get_aval(t)
            if not core.same_type(ta, a):
                raise ValueError(f"linearized function called with a tangent of type "
                                 f"{ta.str_short()}, but the primal's tangent type is "
                                 f"{a.str_short()}.")
            vals.append(t)
        outs = self._lin(*vals)
        return tree_unflatten(self._out_tree, outs)

    def __str__(self):
        return str(self._lin.jaxpr)

    __repr__ = __str__


def linearize(fun, *primals, has_aux=False):
    """``(fun(*primals), f_jvp)``: the primal result now and its linear map on tangents."""
    _check_callable(fun, "linearize")
    leaves, in_tree = _leaves(primals, "linearize primal")
    store = {}
    flat = _flat_fun(lambda *a: fun(*a), in_tree, store, has_aux)
    outs, lin = ad.linearize_flat(flat, leaves)
    out_tree = store["tree"]
    f_jvp = LinearizedFunction(lin, in_tree, out_tree)
    res = (tree_unflatten(out_tree, outs), f_jvp)
    return res + (store["aux"],) if has_aux else res


# ----------------------------------------------------------------- vjp


class VJPFunction:
    """The pullback returned by ``vjp``: cotangent of the output -> tuple of input
    cotangents.  ``.jaxpr`` is the linear (forward) program; ``transpose_jaxpr()``
    stages and returns the backward program."""

    def __init__(self, lin: ad.LinearFunction, in_tree, out_tree, out_avals, in_avals=None):
        self._lin = lin
        self._in_avals = in_avals
        self._in_tree = in_tree
        self._out_tree = out_tree
        self._out_avals = out_avals

    jaxpr = property(lambda self: self._lin.jaxpr)
    residuals = property(lambda self: self._lin.residuals)
    num_residuals = property(lambda self: self._lin.num_residuals)
    residual_bytes = property(lambda self: self._lin.residual_bytes)

    def transpose_jaxpr(self):
        return self._lin.transpose_jaxpr()

    def __call__(self, *args):
        if len(args) != 1:
            raise TypeError(
                f"The function returned by vjp was called with {len(args)} arguments, but it "
                "must be called with a single argument corresponding to the single value "
                "returned by the function being differentiated (even if that value is a "
                "tuple or other container): call f_vjp((ct1, ct2)) rather than "
                "f_vjp(ct1, ct2).")
        cts, tree = tree_flatten(args[0], is_leaf=lambda x: type(x) is Zero)
        if tree != self._out_tree:
            raise ValueError(
                "unexpected tree structure of the argument to the VJP function: it must match "
                f"the structure of the differentiated function's output, {self._out_tree}, "
                f"but got {tree}.")
        vals = []
        for ct, aval in zip(cts, self._out_avals):
            expected = ad.tangent_aval(aval)
            if type(ct) is Zero:
                vals.append(ct)
                continue
            if isinstance(ct, np.ndarray) and ct.dtype == float0:
                ca = core.ShapedArray(ct.shape, float0)
            else:
                ct = _as_value_in(ct, "cotangent")
                ca = core.get_aval(ct)
            # (As JAX: a cotangent of any dtype is taken, as zero, for an integer or
            # boolean output whose cotangent type is float0, if the shapes agree.)
            if expected.dtype == float0 and ca.shape == expected.shape:
                vals.append(Zero(expected))
                continue
            if not core.same_type(ca, expected) and not (
                    ca.shape == expected.shape and ca.dtype.kind == expected.dtype.kind
                    and core.is_weak(ct)):
                raise ValueError(
                    "unexpected JAX type (e.g. shape/dtype) for argument to VJP function: "
                    f"got {ca.str_short()}, but expected {expected.str_short()} because the "
                    "corresponding output of the differentiated function had JAX type "
                    f"{aval.str_short()}")
            if ca.dtype == float0:
                vals.append(Zero(expected))
            else:
                if ca.dtype != expected.dtype:  # a weakly typed Python scalar
                    ct = as_value(np.asarray(ct, expected.dtype))
                vals.append(ct)
        in_cts = [_instantiate(c) for c in self._lin.transpose(vals)]
        if self._in_avals is not None:
            in_cts = [_weak_like(c, a) for c, a in zip(in_cts, self._in_avals)]
        return tuple(tree_unflatten(self._in_tree, in_cts))

    def __str__(self):
        return str(self._lin.jaxpr)

    __repr__ = __str__


class _VJPStatic:
    """The non-array part of a ``VJPFunction`` (its pytree aux data; compared by identity)."""

    def __init__(self, fn):
        lin = fn._lin
        self.parts = (lin.jaxpr, lin.in_avals, lin.out_avals, lin.in_mask, lin.out_mask,
                      fn._in_tree, fn._out_tree, fn._out_avals, fn._in_avals)


def _vjp_flatten(fn):
    return tuple(fn._lin.residuals), _VJPStatic(fn)


def _vjp_unflatten(static, residuals):
    jaxpr, in_avals, out_avals, in_mask, out_mask, in_tree, out_tree, o_avals, i_avals = \
        static.parts
    lin = ad.LinearFunction(jaxpr, list(residuals), in_avals, out_avals, in_mask, out_mask)
    return VJPFunction(lin, in_tree, out_tree, o_avals, i_avals)


# As in JAX (whose vjp returns a ``Partial``), the pullback is a pytree whose leaves are the
# residuals: it can be passed through jit / tree_flatten (gradient-checkpointing page).
from xform.tree_util import register_pytree_node as _register  # noqa: E402

_register(VJPFunction, _vjp_flatten, _vjp_unflatten)


def _weak_like(ct, aval):
    """The cotangent of a weakly typed real primal is weakly typed, as JAX's (there every
    weak->strong step is a convert_element_type whose transpose restores the weak type);
    complex primals are left alone (JAX's C->R gradients come back strong)."""
    if not getattr(aval, "weak_type", False) or not dtypes.is_float(aval.dtype) or \
            not isinstance(ct, (Array, Tracer)):
        return ct
    ca = core.get_aval(ct)
    if ca.weak_type or ca.dtype != aval.dtype:
        return ct
    return convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=True)


def _inline_scalar_inputs(lin, raw, leaves):
    """As JAX's vjp: a residual that is a primal input given as a Python or NumPy scalar
    (or a 0-d NumPy array; not an Array) is not a residual: it is inlined into the
    linear program as a literal (JAX makes literals of such constants when it stages
    the linear program, e.g. the ``3.0:f32[]`` operand of the backward ``remat2`` in
    the gradient-checkpointing page's ``print_fwd_bwd(..., 3.)``), so the pullback's
    pytree leaves are the other residuals."""
    scalar = {id(c): r for r, c in zip(raw, leaves)
              if (type(r) in (int, float, bool, complex) or isinstance(r, np.generic)
                  or (type(r) is np.ndarray and r.ndim == 0)) and isinstance(c, Array)}
    if not scalar or not any(id(r) in scalar for r in lin.residuals):
        return lin
    jaxpr, env, constvars, residuals = lin.jaxpr, {}, [], []
    for v, r in zip(jaxpr.constvars, lin.residuals):
        if id(r) in scalar:
            env[v] = Literal(np.asarray(scalar[id(r)], r.aval.dtype), r.aval)
        else:
            constvars.append(v)
            residuals.append(r)

    def sub(a):
        return env.get(a, a) if not isinstance(a, Literal) else a
    eqns = [e.replace(invars=[sub(a) for a in e.invars]) for e in jaxpr.eqns]
    new = Jaxpr(constvars, jaxpr.invars, [sub(a) for a in jaxpr.outvars], eqns,
                jaxpr.debug_info)
    return ad.LinearFunction(new, residuals, lin.in_avals, lin.out_avals, lin.in_mask,
                             lin.out_mask)


def vjp(fun, *primals, has_aux=False):
    """``(fun(*primals), vjp_fn[, aux])``; ``vjp_fn(ct)`` returns a tuple like ``primals``."""
    _check_callable(fun, "vjp")
    raw = tree_flatten(primals)[0]
    leaves, in_tree = _leaves(primals, "vjp primal")
    store = {}
    flat = _flat_fun(lambda *a: fun(*a), in_tree, store, has_aux)
    outs, lin = ad.linearize_flat(flat, leaves)
    lin = _inline_scalar_inputs(lin, raw, leaves)
    out_tree = store["tree"]
    # in_tree describes the tuple of primals; vjp_fn returns that tuple.
    fn = VJPFunction(lin, in_tree, out_tree, [core.get_aval(o) for o in outs],
                     [core.get_aval(x) for x in leaves])
    res = (tree_unflatten(out_tree, outs), fn)
    return res + (store["aux"],) if has_aux else res


# ----------------------------------------------------------------- grad


def _check_input_dtype_rev(name, holomorphic, allow_int, x):
    dt = core.get_aval(x).dtype
    if holomorphic and dt.kind != "c":
        raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, "
                        f"but got {dt.name}.")
    if not dtypes.is_inexact(dt):
        if dt.kind in "iub":
            if not allow_int:
                raise TypeError(
                    f"{name} requires real- or complex-valued inputs (input dtype that is a "
                    f"sub-dtype of np.inexact), but got {dt.name}. If you want to use "
                    "Boolean- or integer-valued inputs, use vjp or set allow_int to True.")
        else:
            raise TypeError(f"{name} requires numerical-valued inputs (input dtype that is a "
                            f"sub-dtype of np.bool_ or np.number), but got {dt.name}.")


def _check_output_dtype_rev(name, holomorphic, x):
    dt = core.get_aval(x).dtype
    if holomorphic:
        if dt.kind != "c":
            raise TypeError(f"{name} with holomorphic=True requires outputs with complex "
                            f"dtype, but got {dt.name}.")
    elif dt.kind == "c":
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a "
                        f"sub-dtype of np.floating), but got {dt.name}. For holomorphic "
                        "differentiation, pass holomorphic=True. For differentiation of "
                        "non-holomorphic functions involving complex outputs, use "
                        "xform.vjp directly.")
    elif not dtypes.is_float(dt):
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a "
                        f"sub-dtype of np.floating), but got {dt.name}. For "
                        "differentiation of functions with integer outputs, use xform.vjp "
                        "directly.")


def _check_scalar(out):
    msg = "Gradient only defined for scalar-output functions. Output {}.".format
    leaves, tree = tree_flatten(out)
    if len(leaves) != 1 or tree != tree_structure(0):
        raise TypeError(msg(f"was {_short(out)}"))
    try:
        aval = core.get_aval(leaves[0])
    except TypeError:
        raise TypeError(msg(f"was {_short(out)}")) from None
    if aval.shape != ():
        raise TypeError(msg(f"had shape: {aval.shape}"))


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
                   reduce_axes=()):
    """``(fun(*args), gradient)``; with ``has_aux``: ``((value, aux), gradient)``."""
    _check_callable(fun, "value_and_grad")
    argnums = _norm_argnums(argnums, "value_and_grad")
    return _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, "value_and_grad")


def _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, name):
    @_wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        f_partial, dyn = _dyn_args(name, argnums, args, kwargs, fun)
        leaves, _ = tree_flatten(dyn)
        for leaf in leaves:
            _check_input_dtype_rev("grad", holomorphic, allow_int, _as_value_in(leaf, name))
        if has_aux:
            ans, vjp_fn, aux = vjp(f_partial, *dyn, has_aux=True)
        else:
            ans, vjp_fn = vjp(f_partial, *dyn)
        _check_scalar(ans)
        _check_output_dtype_rev("grad", holomorphic, ans)
        a = core.get_aval(ans)
        # the seed 1 has the output's type, weak type included (as JAX's: a weakly typed
        # output gives weakly typed gradients, e.g. grad(lambda x: 2. * x)(3.))
        g = vjp_fn(Array(np.ones((), a.dtype), a.weak_type) if a.weak_type
                   else as_value(np.ones((), a.dtype)))
        g = g[0] if isinstance(argnums, int) else g
        return ((ans, aux) if has_aux else ans), g
    return value_and_grad_f


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """The gradient of a scalar-valued ``fun`` with respect to ``args[argnums]``."""
    _check_callable(fun, "grad")
    argnums = _norm_argnums(argnums, "grad")
    vg = _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, "grad")

    @_wraps(fun)
    def grad_f(*args, **kwargs):
        (ans, g) = vg(*args, **kwargs)
        if has_aux:
            return g, ans[1]
        return g
    return grad_f


# ----------------------------------------------------------------- jacobians


def _map_basis(fn, basis):
    """``fn`` applied to each row of the (leading-axis) ``basis`` leaves; results
    stacked along a new leading axis."""
    return vmap(fn)(*basis)


def _std_basis(avals):
    """Leaves of the identity over the concatenated (flattened) leaves, leading axis N."""
    sizes = [a.size for a in avals]
    n = sum(sizes)
    out, off = [], 0
    for a, s in zip(avals, sizes):
        dt = a.dtype
        eye = np.zeros((n, s), dt)
        eye[np.arange(off, off + s), np.arange(s)] = 1
        eye = eye.reshape((n,) + a.shape)
        # weakly typed like its aval (JAX's basis keeps weak types: jacfwd(sin)(1.) is weak)
        out.append(Array(eye, True) if getattr(a, "weak_type", False) else as_value(eye))
        off += s
    return out, n


def _split_rows(x, n_lead, sizes, shapes, lead_shape, trailing=False):
    """Reshape ``x`` of shape (N, *rest) into pieces; piece k covers rows of leaf k."""
    lax = structural
    pieces, off = [], 0
    rest = tuple(x.shape[1:])
    for s, shp in zip(sizes, shapes):
        part = lax.slice_in_dim(x, off, off + s, axis=0) if (off, s) != (0, x.shape[0]) else x
        off += s
        part = lax.reshape(part, tuple(shp) + rest)        # (leaf shape..., rest...)
        if trailing:                                       # move leaf dims after rest
            k = len(shp)
            perm = tuple(range(k, k + len(rest))) + tuple(range(k))
            if perm != tuple(range(len(perm))):
                part = lax.transpose(part, perm)
        pieces.append(part)
    return pieces


def _check_input_dtype_jacfwd(holomorphic, x):
    dt = core.get_aval(x).dtype
    if holomorphic:
        if dt.kind != "c":
            raise TypeError("jacfwd with holomorphic=True requires inputs with complex dtype, "
                            f"but got {dt.name}.")
    elif not dtypes.is_float(dt):
        raise TypeError("jacfwd requires real-valued inputs (input dtype that is a sub-dtype "
                        f"of np.floating), but got {dt.name}. For holomorphic "
                        "differentiation, pass holomorphic=True. For differentiation of "
                        "non-holomorphic functions involving complex inputs or integer "
                        "inputs, use xform.jvp directly.")


def _jac_tree(out_tree, in_tree, blocks):
    """blocks[i][j]: block of output leaf i w.r.t. input leaf j -> nested pytree."""
    return tree_unflatten(out_tree, [tree_unflatten(in_tree, row) for row in blocks])


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """Jacobian by forward mode (one JVP per input element, vectorized by vmap)."""
    _check_callable(fun, "jacfwd")
    argnums = _norm_argnums(argnums, "jacfwd")

    @_wraps(fun)
    def jacfun(*args, **kwargs):
        f_partial, dyn = _dyn_args("jacfwd", argnums, args, kwargs, fun)
        dyn_tree_arg = dyn[0] if isinstance(argnums, int) else dyn
        leaves, in_tree = _leaves(dyn_tree_arg, "jacfwd")
        # checked with tree_map, as JAX does: custom nodes are rebuilt around the
        # checks' results (None), which their constructors see
        tree_map(lambda x: _check_input_dtype_jacfwd(holomorphic, _as_value_in(x, "jacfwd")),
                 dyn_tree_arg)
        avals = [core.get_aval(x) for x in leaves]
        basis, n = _std_basis(avals)
        store = {}

        def f_flat(*xs):
            arg = tree_unflatten(in_tree, xs)
            out = f_partial(arg) if isinstance(argnums, int) else f_partial(*arg)
            if has_aux:
                out, aux = out
                store.setdefault("aux", aux)
            ls, tree = tree_flatten(out)
            store.setdefault("tree", tree)
            return [_as_value_in(o, "function output") for o in ls]

        y = f_flat(*leaves)
        out_tree = store["tree"]
        if holomorphic:
            for o in y:
                if core.get_aval(o).dtype.kind != "c":
                    raise TypeError("jacfwd with holomorphic=True requires outputs with "
                                    f"complex dtype, but got {core.get_aval(o).dtype.name}.")

        def push(*ts):
            _, touts = ad.jvp_flat(lambda *xs: f_flat(*xs)[:len(y)], leaves, list(ts))
            return [_instantiate(t) for t in touts]

        jac = _map_basis(push, basis)                     # each: (N, *out_shape)
        sizes = [a.size for a in avals]
        shapes = [a.shape for a in avals]
        blocks = [_split_rows(j, n, sizes, shapes, None, trailing=True) for j in jac]
        res = _jac_tree(out_tree, in_tree, blocks)
        return (res, store.get("aux")) if has_aux else res
    return jacfun


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """Jacobian by reverse mode (one VJP per output element, vectorized by vmap)."""
    _check_callable(fun, "jacrev")
    argnums = _norm_argnums(argnums, "jacrev")

    @_wraps(fun)
    def jacfun(*args, **kwargs):
        f_partial, dyn = _dyn_args("jacrev", argnums, args, kwargs, fun)
        dyn_tree_arg = dyn[0] if isinstance(argnums, int) else dyn
        leaves, in_tree = _leaves(dyn_tree_arg, "jacrev")
        # checked with tree_map, as JAX does (custom nodes rebuilt around None)
        tree_map(lambda x: _check_input_dtype_rev("jacrev", holomorphic, allow_int,
                                                  _as_value_in(x, "jacrev")), dyn_tree_arg)
        store = {}

        def f_flat(*xs):
            arg = tree_unflatten(in_tree, xs)
            out = f_partial(arg) if isinstance(argnums, int) else f_partial(*arg)
            if has_aux:
                out, store["aux"] = out
            ls, store["tree"] = tree_flatten(out)
            return [_as_value_in(o, "function output") for o in ls]

        y, lin = ad.linearize_flat(f_flat, leaves)
        out_tree = store["tree"]
        for o in y:
            _check_output_dtype_rev("jacrev", holomorphic, o)
        out_avals = [core.get_aval(o) for o in y]
        basis, m = _std_basis(out_avals)

        in_avals = [core.get_aval(x) for x in leaves]

        def pull(*cts):
            return [_weak_like(_instantiate(c), a)
                    for c, a in zip(lin.transpose(list(cts)), in_avals)]

        jac = _map_basis(pull, basis)                      # each: (M, *in_shape)
        per_in = [_split_rows(j, m, [a.size for a in out_avals],
                              [a.shape for a in out_avals], None) for j in jac]
        blocks = [[per_in[j][i] for j in range(len(in_avals))] for i in range(len(out_avals))]
        res = _jac_tree(out_tree, in_tree, blocks)
        return (res, store.get("aux")) if has_aux else res
    return jacfun


jacobian = jacrev


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """``jacfwd(jacrev(fun))``: dense Hessian by forward-over-reverse."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic),
                  argnums, has_aux=has_aux, holomorphic=holomorphic)


# ----------------------------------------------------------------- linear_transpose


class LinearTransposeFunction:
    """The transpose of a linear function; printing it shows the backward program."""

    def __init__(self, jaxpr, consts, in_tree, in_avals, out_tree, out_avals):
        self.jaxpr = jaxpr            # the forward linear program
        self.consts = consts
        self._in_tree = in_tree
        self._in_avals = in_avals
        self._out_tree = out_tree
        self._out_avals = out_avals

    def __call__(self, out_ct):
        cts, tree = tree_flatten(out_ct)
        if tree != self._out_tree:
            raise TypeError("cotangent tree does not match function output, expected "
                            f"{self._out_tree} but got {tree}")
        vals = [_as_value_in(c, "cotangent") for c in cts]
        for c, a in zip(vals, self._out_avals):
            ca = core.get_aval(c)
            if ca.shape != a.shape or (ca.dtype != a.dtype and not ca.weak_type):
                raise TypeError("cotangent type does not match function output, expected "
                                f"{a.str_short()} but got {ca.str_short()}")
        vals = [c if core.get_aval(c).dtype == a.dtype else as_value(np.asarray(c, a.dtype))
                for c, a in zip(vals, self._out_avals)]
        res = ad.backward_pass(self.jaxpr, self.consts, vals)
        return tuple(tree_unflatten(self._in_tree, [_instantiate(r) for r in res]))

    def transpose_jaxpr(self):
        """The backward program, staged (cotangents of outputs -> of inputs)."""
        def bwd(*cts):
            return [_instantiate(r) for r in ad.backward_pass(self.jaxpr, self.consts,
                                                              list(cts))]
        jaxpr, consts = trace_to_jaxpr(bwd, self._out_avals, name="transpose")
        return ClosedJaxpr(jaxpr, consts)

    def __str__(self):
        return str(self.transpose_jaxpr())

    __repr__ = __str__


def linear_transpose(fun, *primals, reduce_axes=()):
    """The transpose of the linear ``fun``; ``primals`` give the input shapes/dtypes."""
    _check_callable(fun, "linear_transpose")
    leaves, in_tree = tree_flatten(primals)
    in_avals = []
    for x in leaves:
        if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, (Array, Tracer)):
            in_avals.append(core.ShapedArray(tuple(x.shape),
                                             dtypes.canonicalize_dtype(np.dtype(x.dtype))))
        else:
            in_avals.append(core.get_aval(_as_value_in(x, "linear_transpose")).strip_weak_type())
    store = {}
    flat = _flat_fun(lambda *a: fun(*a), in_tree, store)
    jaxpr, consts = trace_to_jaxpr(flat, in_avals, name="linear_transpose")
    out_avals = [v.aval for v in jaxpr.outvars]
    in_dts = [a.dtype for a in in_avals]
    out_dts = [a.dtype for a in out_avals]
    if not (all(dtypes.is_inexact(d) for d in in_dts + out_dts)
            or all(dtypes.is_integer(d) for d in in_dts + out_dts)):
        raise TypeError("linear_transpose only supports [float or complex] -> [float or "
                        "complex], and integer -> integer functions, but got "
                        f"{[d.name for d in in_dts]} -> {[d.name for d in out_dts]}.")
    return LinearTransposeFunction(jaxpr, consts, in_tree, in_avals, store["tree"], out_avals)
