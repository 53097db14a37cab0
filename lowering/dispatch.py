"""Generated call paths for one compiled signature (jit's cache-hit fast path).

``make_caller(compiled, consts, weak_types, in_tree, out_tree)`` writes, and
compiles with ``exec`` once per jit specialisation, a Python function
specialised to that exact signature::

    call(args) -> result pytree, or MISS

It does in straight-line code what the general path does with loops and
generic helpers:

* the argument pytree (tuples, lists, dicts, ``None``, namedtuples) is taken
  apart by unpacking with exact type and length checks -- no generic flatten,
  no treedef to build or compare;
* each leaf is checked against its parameter: an Array whose device buffer
  carries this program's aval object for that parameter (one identity test
  proves shape, dtype and device placement, as the runtime created it) with
  the right weak type; or a NumPy array / host-only Array of exactly the
  parameter's shape and dtype, copied to the device;
* the hoisted constants' buffers are baked in;
* the outputs are wrapped in Arrays inline (no per-output call) and the
  result pytree is built by one generated expression.

Anything unexpected -- another structure, dtype, shape or weak type, a deleted
or sharded Array, a Python scalar, an exception from the runtime -- returns
``MISS`` and the caller takes its general path, which validates, converts and
raises the proper errors.  The cache key is thereby proven by the checks
themselves; nothing else is re-validated per call.
"""
from __future__ import annotations

import numpy as np

from xform._src.interpreters import tree_util as _tu
from xform._src.interpreters.core import Array
from xform._src.interpreters.core import ShapedArray
from xform._src.interpreters.ir import ClosedJaxpr, eval_jaxpr
from xform._src.interpreters.staging import trace_to_jaxpr
from xform._src.primitives.elementwise import bitcast_convert_type, convert_element_type
from xform._src.primitives.structural import reshape, slice as slice_
from xform._src.interpreters import interrupts

__all__ = ["MISS", "make_caller", "tree_codegen_ok"]


class _Miss:
    __slots__ = ()

    def __repr__(self):
        return "MISS"


MISS = _Miss()

_BUILTIN_STYLES = ("tuple", "list", "dict", "none", "namedtuple")


def tree_codegen_ok(treedef) -> bool:
    """True when every node of ``treedef`` is a built-in container the generated
    code can take apart (tuple, list, dict, None, namedtuple)."""
    def ok(node):
        if node is _tu._LEAF:
            return True
        kind, _, children = node
        return kind.style in _BUILTIN_STYLES and all(ok(c) for c in children)
    return ok(treedef._node)


class _Writer:
    def __init__(self):
        self.lines = []
        self.ns = {}
        self.n = 0

    def name(self, prefix):
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, value, prefix="_c"):
        nm = self.name(prefix)
        self.ns[nm] = value
        return nm

    def emit(self, line, indent=1):
        self.lines.append("    " * indent + line)


def _unpack(w, node, src, leaves, root=False):
    """Emit checks + unpacking of ``src`` (a local name) against ``node``; append the
    leaf local names to ``leaves`` in flattening order."""
    if node is _tu._LEAF:
        leaves.append(src)
        return
    kind, aux, children = node
    n = len(children)
    style = kind.style
    if style == "none":
        w.emit(f"if {src} is not None: return MISS")
        return
    if style == "dict":
        t = "dict"
    elif style in ("tuple", "list"):
        t = style
    else:                       # namedtuple: its exact class
        t = w.const(kind.type, "_T")
    if root:                    # the positional-argument tuple itself
        w.emit(f"if len({src}) != {n}: return MISS")
    else:
        w.emit(f"if type({src}) is not {t} or len({src}) != {n}: return MISS")
    names = [w.name("_a") for _ in range(n)]
    if style == "dict":
        keys = [w.const(k, "_k") for k in aux]
        w.emit("try:")
        for nm, k in zip(names, keys):
            w.emit(f"{nm} = {src}[{k}]", 2)
        w.emit("except Exception: return MISS")
    elif n == 1:
        w.emit(f"{names[0]} = {src}[0]")
    elif n:
        w.emit(f"{', '.join(names)} = {src}")
    for nm, child in zip(names, children):
        _unpack(w, child, nm, leaves)


def _build(w, node, outs):
    """The Python expression rebuilding ``node`` from the output locals ``outs``
    (an iterator of names)."""
    if node is _tu._LEAF:
        return next(outs)
    kind, aux, children = node
    parts = [_build(w, c, outs) for c in children]
    style = kind.style
    if style == "tuple":
        return "(" + "".join(p + ", " for p in parts) + ")"
    if style == "list":
        return "[" + ", ".join(parts) + "]"
    if style == "none":
        return "None"
    if style == "dict":
        return "{" + ", ".join(f"{w.const(k, '_k')}: {p}" for k, p in zip(aux, parts)) + "}"
    if style == "namedtuple":
        return f"{w.const(kind.type, '_T')}({', '.join(parts)})"
    un = w.const(kind.unflatten, "_U")
    ax = w.const(aux, "_X")
    return f"{un}({ax}, [{', '.join(parts)}])"


def make_caller(compiled, consts, weak_types, in_tree=None, out_tree=None,
                host_leaves=(), packed=None, on_hot=None, packed_avals=None):
    """A generated call path for ``compiled`` (a ``runtime.Compiled``) or ``None``.

    ``consts``: leading arguments (a jit's hoisted constants; Arrays on this
    program's device, else there is no fast path).  ``weak_types``: the weak type
    of each remaining parameter.  ``in_tree``: the treedef of the positional
    argument tuple (built-in containers only, see ``tree_codegen_ok``); ``None``
    means the caller passes the flat list of leaves.  ``out_tree``: the output
    treedef (``None``: return the list of output Arrays).  ``host_leaves``: indices
    of the leaves seen as NumPy arrays.  ``packed``: for a program built by
    ``packed_program``, the parameter indices whose NumPy arrays travel in its one
    packed byte buffer (those leaves must be NumPy arrays of exactly their type; the
    caller joins their bytes and makes one host-to-device transfer).  ``on_hot()``
    is called once, after ``PACK_AFTER`` calls passed NumPy arrays for at least
    ``PACK_MIN`` packable leaves (the jit layer then builds the packed variant).
    Programs with donated inputs get no fast path.
    """
    from xform._src.lowering import runtime as rt  # deferred: keeps `import xform` light
    n_params = compiled._n if not packed else len(consts) + 1 + (
        len(weak_types) - len(packed))
    if compiled._donated_idx or len(consts) + len(weak_types) - (
            len(packed) - 1 if packed else 0) != compiled._n or n_params != compiled._n:
        return None
    if in_tree is not None and not tree_codegen_ok(in_tree):
        return None
    if out_tree is not None and out_tree.num_leaves != len(compiled.out_avals):
        return None
    k = len(consts)
    const_bufs = []
    for c, (_, _, javal) in zip(consts, compiled._specs[:k]):
        b = c._buf if type(c) is Array and not c._deleted else None
        if b is None or b.aval is not javal:
            return None
        const_bufs.append(b)
    specs = compiled._specs[k:]
    weaks = tuple(bool(x) for x in weak_types)

    w = _Writer()
    w.ns.update(MISS=MISS, A=Array, _new=object.__new__, _ex=compiled._execute,
                _hs=compiled._handlers, _ndarray=np.ndarray)
    # host values (NumPy arrays, host-only Arrays) of exactly a parameter's type
    put, HBS, sh, devlist = rt._put, rt._HBS, compiled._sh, compiled._devlist

    def host(x, shape, dtype, javal, weak):
        t = type(x)
        if t is np.ndarray:
            if weak:
                return None
            v = x
        elif t is Array:
            if x._deleted or x._buf is not None or bool(x.weak_type) != weak:
                return None
            v = x._npy
            if type(v) is not np.ndarray:
                return None
        else:
            return None
        if v.dtype != dtype or v.shape != shape:
            return None
        return put(javal, sh, [v], devlist, True, False, HBS, True)    # enable_x64
    w.ns.update(_host=host, _put=put, _HBS=HBS, _sh=sh, _dl=devlist)

    w.ns.update(_down=interrupts.closing)
    w.lines.append("def call(args):")
    w.emit("if _down[0]: return MISS")      # the interpreter is exiting: the general path says so
    leaves = []
    if in_tree is None:
        n = len(weak_types)
        w.emit(f"if len(args) != {n}: return MISS")
        leaves = [w.name("_l") for _ in range(n)]
        if n == 1:
            w.emit(f"{leaves[0]} = args[0]")
        elif n:
            w.emit(f"{', '.join(leaves)} = args")
    else:
        if in_tree.num_leaves != len(weak_types):
            return None
        if in_tree._node is _tu._LEAF or in_tree._node[0].style != "tuple":
            return None
        _unpack(w, in_tree._node, "args", leaves, root=True)
    bufs = [w.const(b, "_cb") for b in const_bufs]
    packed = tuple(packed or ())
    if packed:
        # the packed program's parameters: [packed u8 bytes] + the other leaves
        orig_specs = [(tuple(a.shape), a.dtype) for a in packed_avals]
        if len(orig_specs) != len(leaves):
            return None
        pk_spec, rest_specs = specs[0], iter(specs[1:])
        w.ns.update(_fb=np.frombuffer, _u8=np.dtype(np.uint8))
    hot = [i for i in host_leaves if _packable_aval(specs[i][0], specs[i][1], weaks[i])] \
        if on_hot is not None and not packed else []
    if len(hot) < PACK_MIN:
        hot = []
    else:
        w.ns.update(_hot=[0], _on_hot=on_hot)
    parts = []
    for li, leaf in enumerate(leaves):
        if packed and li in packed:
            shape, dtype = orig_specs[li]
            sh_, dt_ = w.const(shape), w.const(dtype)
            w.emit(f"if type({leaf}) is not _ndarray or {leaf}.dtype is not {dt_} or "
                   f"{leaf}.shape != {sh_}: return MISS")
            parts.append(f"{leaf}.tobytes()")
            continue
        if packed:
            (shape, dtype, javal), weak = next(rest_specs), weaks[li]
        else:
            (shape, dtype, javal), weak = specs[li], weaks[li]
        b = w.name("_b")
        jv, sh_, dt_ = w.const(javal, "_j"), w.const(shape), w.const(dtype)
        # An Array whose buffer carries this parameter's aval object.  A deleted
        # (donated) Array's buffer is deleted too: the runtime refuses it and the
        # general path reports it, so no per-call flag test is needed here.
        weak_ok = f"{leaf}.weak_type" if weak else f"not {leaf}.weak_type"
        w.emit(f"if type({leaf}) is A:")
        w.emit(f"{b} = {leaf}._buf", 2)
        w.emit(f"if {b} is None or {b}.aval is not {jv} or not ({weak_ok}):", 2)
        w.emit(f"{b} = _host({leaf}, {sh_}, {dt_}, {jv}, {weak})", 3)
        w.emit(f"if {b} is None: return MISS", 3)
        if not weak:
            # a NumPy array of exactly the parameter's type (dtype identity here, ==
            # in _host): copied to the device
            w.emit(f"elif type({leaf}) is _ndarray and {leaf}.dtype is {dt_} and "
                   f"{leaf}.shape == {sh_}:")
            w.emit(f"{b} = _put({jv}, _sh, [{leaf}], _dl, True, False, _HBS, True)", 2)
            if hot and li == hot[0]:
                w.emit("_hot[0] += 1", 2)
                w.emit(f"if _hot[0] == {PACK_AFTER}: _on_hot()", 2)
        w.emit("else:")
        w.emit(f"{b} = _host({leaf}, {sh_}, {dt_}, {jv}, {weak})", 2)
        w.emit(f"if {b} is None: return MISS", 2)
        bufs.append(b)
    if packed:
        jpk = w.const(pk_spec[2], "_j")
        w.emit(f"_pk = _put({jpk}, _sh, [_fb(b''.join([{', '.join(parts)}]), _u8)], _dl, True, "
               "False, _HBS, True)")
        bufs.insert(len(const_bufs), "_pk")
    w.emit("try:")
    w.emit(f"_o = _ex([{', '.join(bufs)}]).consume_with_handlers(_hs)", 2)
    w.emit("except Exception: return MISS")
    n_out = len(compiled.out_avals)
    outs = [w.name("_r") for _ in range(n_out)]
    if n_out == 1:
        w.emit(f"{outs[0]} = _o[0]")
    elif n_out:
        w.emit(f"{', '.join(outs)} = _o")
    committed = bool(compiled._committed)
    res = []
    for o, weak in zip(outs, compiled._out_weak):
        r = w.name("_y")
        w.emit(f"{r} = _new(A); {r}._npy = None; {r}._buf = {o}; "
               f"{r}.weak_type = {bool(weak)}; {r}._committed = {committed}; "
               f"{r}._deleted = False; {r}._born = -1")
        res.append(r)
    if out_tree is None:
        w.emit(f"return [{', '.join(res)}]")
    else:
        w.emit(f"return {_build(w, out_tree._node, iter(res))}")
    src = "\n".join(w.lines)
    code = compile(src, f"<xform jit dispatch {getattr(compiled, '_name', '')}>", "exec")
    exec(code, w.ns)
    call = w.ns["call"]
    call.__source__ = src
    watch = getattr(compiled, "_watch_namespace", None)
    if watch is not None:      # tiered compilation: _ex follows the executable swap
        watch(w.ns)
    return call


# ----------------------------------------------------------------- one transfer for NumPy leaves

PACK_MIN = 2              # NumPy leaves needed before packing pays (one put saved at least)
PACK_AFTER = 64           # calls with NumPy leaves before the packed variant is built
PACK_MAX_BYTES = 1 << 16  # small arrays only: there the put's fixed cost dominates


def _packable_aval(shape, dtype, weak):
    dtype = np.dtype(dtype) if not hasattr(dtype, "kind") else dtype
    size = 1
    for d in shape:
        size *= d
    return (not weak and getattr(dtype, "kind", "V") in "biuf" and size > 0
            and dtype.itemsize in (1, 2, 4, 8))


def pack_plan(in_avals, n_consts, host_leaves):
    """The parameter indices (after the constants) whose NumPy arrays a packed variant
    would carry in one byte buffer, or () when packing does not pay."""
    params = in_avals[n_consts:]
    idx = [i for i in host_leaves if i < len(params)
           and _packable_aval(params[i].shape, params[i].dtype, params[i].weak_type)]
    total = sum(params[i].size * params[i].dtype.itemsize for i in idx)
    if len(idx) < PACK_MIN or total > PACK_MAX_BYTES:
        return ()
    return tuple(idx)


def packed_program(closed, n_consts, packed):
    """``closed`` with the parameters ``packed`` (indices after the ``n_consts``
    constants) replaced by one ``uint8[total]`` parameter (placed right after the
    constants) that the program slices and bitcasts back: the bytes of those arrays,
    C order, concatenated in parameter order."""

    avals = closed.in_avals
    params = avals[n_consts:]
    pset = set(packed)
    layout, off = [], 0
    for i in packed:
        a = params[i]
        nb = a.size * a.dtype.itemsize
        layout.append((i, off, nb))
        off += nb
    new_avals = (list(avals[:n_consts]) + [ShapedArray((off,), np.dtype(np.uint8))]
                 + [a for i, a in enumerate(params) if i not in pset])

    def fun(*xs):
        consts, pk, rest = xs[:n_consts], xs[n_consts], iter(xs[n_consts + 1:])
        vals = {}
        for i, o, nb in layout:
            a = params[i]
            seg = slice_(pk, (o,), (o + nb,))
            isz = a.dtype.itemsize
            if a.dtype == np.bool_:
                v = convert_element_type(seg, np.bool_)
            elif isz == 1:
                v = bitcast_convert_type(seg, a.dtype)
            else:
                v = bitcast_convert_type(reshape(seg, (a.size, isz)), a.dtype)
            vals[i] = reshape(v, a.shape)
        args = [vals[i] if i in vals else next(rest) for i in range(len(params))]
        return list(eval_jaxpr(closed.jaxpr, closed.consts, *consts, *args))
    jaxpr, consts = trace_to_jaxpr(fun, new_avals, name="packed")
    return ClosedJaxpr(jaxpr, consts)


def make_packed_caller(compiled, closed, consts, weak_types, in_tree, out_tree, packed,
                       name="packed"):
    """Compile the packed variant of ``compiled`` (built from ``closed``, its program)
    and return its generated call path (or None)."""
    from xform._src.lowering import runtime as rt  # deferred: keeps `import xform` light
    prog = packed_program(closed, len(consts), packed)
    device = compiled.device if compiled._committed else None
    # already in a background thread: no quick tier for the variant
    pc = rt.compile_jaxpr(prog, device=device, name=f"{name}_packed", tier="optimized")
    if type(pc) is not rt.Compiled or pc.device != compiled.device:
        return None
    return make_caller(pc, consts, weak_types, in_tree, out_tree, packed=packed,
                       packed_avals=closed.in_avals[len(consts):])
