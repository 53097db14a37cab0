"""Shape-polymorphic StableHLO for ``xform.export`` by generalising concrete lowerings.

xform traces programs with concrete shapes only.  To export a program that
works for every value of some dimension variables (``b`` in ``f32[b, 4]``) we

1. lower it at the corners of a box of sample values (two unusual primes per
   variable: 2**k lowerings for k variables) and at two check points, one of
   small sizes (a program that branches on a size between the scales is
   rejected rather than silently specialised);
2. require the texts to be identical except for numbers: every number that
   differs (a tensor dimension, or the value of a scalar constant such as the
   ``b * 4`` divisor of a mean) must be a multilinear polynomial in the
   variables with integer coefficients (fitted on the corners, verified at
   the check point), e.g. ``b``, ``4*b``, ``a*b``;
3. rewrite the corner-0 text: symbolic dimensions become ``?``; the ops whose
   result shape is not implied by their operands get their dynamic forms
   (``broadcast_in_dim`` -> ``dynamic_broadcast_in_dim``, ``reshape`` ->
   ``dynamic_reshape``, ``iota`` -> ``dynamic_iota``, a splat ``constant`` ->
   scalar + ``dynamic_broadcast_in_dim``, ``dynamic_slice`` with symbolic sizes ->
   clamped ``real_dynamic_slice``) with the shape computed from the dimension
   variables; a dimension-valued constant is computed from them;
4. each function computes the dimension variables it needs with
   ``get_dimension_size`` on an argument having that plain variable as a
   dimension (``main`` also solves ``k*b + c`` dimensions), and ``main`` checks JAX's shape assertions (``b >= 1``,
   consistent sizes) with ``shape_assertion`` custom calls carrying JAX's
   messages.

The consumer (JAX or xform) specialises the module to concrete shapes with
StableHLO shape refinement.  Programs whose structure depends on the variables
(other attributes, payloads, loop bounds...) are rejected with a ValueError
naming the operation.  Pure Python (no jax import).
"""
from __future__ import annotations

import itertools
import re
from fractions import Fraction

import numpy as np

# Two sample values per variable (and a check value): primes unlikely to be
# sizes of their own in a program.  A second, small check point catches programs
# that branch on a size (``if x.shape[0] > 100``) between the two scales.
_SAMPLES = [(1009, 1013, 1019), (1021, 1031, 1033), (1039, 1049, 1051), (1061, 1063, 1069)]
_SMALL = (7, 11, 13, 17)
MAX_VARS = 3

_NUM = re.compile(r'"0x[0-9A-Fa-f]+"|\d+')
_OPNAME = re.compile(r'"([a-z_]+\.[a-z_0-9]+)"\(')


def sample_points(variables, constraints=()):
    """[(dict var -> value)] for the 2**k corners, then the two check points.

    ``constraints``: polynomials that must be >= 0 at every point (``a >= b`` is
    ``a - b``); the variables take the sample rows in an order satisfying them.
    """
    if len(variables) > MAX_VARS:
        raise ValueError(f"export: at most {MAX_VARS} dimension variables are supported, got "
                         f"{len(variables)} ({', '.join(variables)})")
    for order in itertools.permutations(range(len(variables))):
        corners = [dict(zip(variables, (_SAMPLES[order[j]][bit] for j, bit in enumerate(bits))))
                   for bits in itertools.product((0, 1), repeat=len(variables))]
        check = {v: _SAMPLES[order[j]][2] for j, v in enumerate(variables)}
        small = {v: _SMALL[order[j]] for j, v in enumerate(variables)}
        points = corners + [check, small]
        if all(_eval(c, p) >= 0 for c in constraints for p in points):
            return points
    raise ValueError("export: xform traces at sample sizes and cannot choose sizes that satisfy "
                     "the symbolic constraints; it supports constraints that some ordering of "
                     "the dimension variables satisfies (e.g. 'a >= b')")


def _fits(poly, values, variables, points):
    """``poly`` (fitted on the corners) reproduces ``values`` at the check points."""
    n = 2 ** len(variables)
    return poly is not None and all(_eval(poly, p) == v
                                    for p, v in zip(points[n:], values[n:]))


# ----------------------------------------------------------------- polynomials
# A polynomial: dict {monomial: int}, monomial = tuple of sorted variable names
# (multilinear: each variable at most once).


def _fit(variables, values, points):
    """The multilinear polynomial through ``values`` (one per corner of ``points``, in
    ``sample_points`` order); None if its coefficients are not integers."""
    k = len(variables)
    lo = [points[0][v] for v in variables]
    hi = [points[2 ** (k - 1 - j)][v] for j, v in enumerate(variables)]
    # g_S: coefficients in u_j = (x_j - lo_j) / (hi_j - lo_j), by inclusion-exclusion
    poly = {}
    for S in itertools.product((0, 1), repeat=k):
        g = Fraction(0)
        for T in itertools.product((0, 1), repeat=k):
            if any(t > s for t, s in zip(T, S)):
                continue
            idx = int("".join(map(str, T)), 2) if k else 0
            sign = (-1) ** (sum(S) - sum(T))
            g += sign * values[idx]
        if g == 0:
            continue
        # expand g * prod_{j in S} (x_j - lo_j) / (hi_j - lo_j)
        term = {(): Fraction(g)}
        for j in range(k):
            if S[j]:
                new = {}
                d = hi[j] - lo[j]
                for m, c in term.items():
                    m2 = tuple(sorted(m + (variables[j],)))
                    new[m2] = new.get(m2, 0) + c / d
                    new[m] = new.get(m, 0) - c * lo[j] / d
                term = new
        for m, c in term.items():
            poly[m] = poly.get(m, 0) + c
    out = {}
    for m, c in poly.items():
        if c != 0:
            if c.denominator != 1:
                return None
            out[m] = int(c)
    return out


def _eval(poly, env):
    total = 0
    for m, c in poly.items():
        v = c
        for x in m:
            v *= env[x]
        total += v
    return total


def poly_str(poly):
    """JAX's spelling: ``2*b + 3``, ``a*b - 1``."""
    if not poly:
        return "0"
    parts = []
    for m in sorted(poly, key=lambda m: (len(m), m), reverse=True):   # JAX's order
        c = poly[m]
        if not m:
            s = str(abs(c))
        elif abs(c) == 1:
            s = "*".join(m)
        else:
            s = f"{abs(c)}*" + "*".join(m)
        parts.append(("- " if c < 0 else "+ ") + s)
    out = " ".join(parts)
    return out[2:] if out.startswith("+ ") else out   # JAX prints "- b + a"


# ----------------------------------------------------------------- text analysis


def _type_dim_spans(line):
    """[(start, end)] of the dimension lists ``3x?x`` of every ``tensor<...>`` in ``line``."""
    spans = []
    for m in re.finditer(r"tensor<((?:[0-9?]+x)*)", line):
        spans.append((m.start(1), m.end(1)))
    return spans


def _in_spans(pos, spans):
    return any(a <= pos < b for a, b in spans)


def _decode_scalar(hexpayload, elem):
    raw = bytes.fromhex(hexpayload[3:-1])
    dt = {"f32": "<f4", "f64": "<f8", "f16": "<f2", "i32": "<i4", "i64": "<i8", "i16": "<i2",
          "i8": "<i1", "ui8": "<u1", "ui16": "<u2", "ui32": "<u4", "ui64": "<u8"}.get(elem)
    if dt is None:
        if elem == "bf16":
            return float(np.frombuffer(b"\0\0" + raw[:2], "<f4")[0]) if len(raw) == 2 else None
        return None
    arr = np.frombuffer(raw, dt)
    if arr.size != 1:
        return None
    v = arr[0].item()
    if isinstance(v, float):
        if not float(v).is_integer():
            return None
        v = int(v)
    return v


class PolyError(ValueError):
    pass


def generalize(texts, variables, arg_specs, spec_text, arg_paths, points, constraints=()):
    """The polymorphic module text from ``texts`` (lowerings at ``sample_points``).

    ``arg_specs``: per flat argument, its shape as polynomials (None dims are
    constants, given as ints); ``spec_text``: JAX's ``args[0].shape = (b, 4)``
    listing for assertion messages.  Returns (text, result shapes as lists of
    polynomials or ints).
    """
    ncorners = 2 ** len(variables)
    lines = [t.splitlines() for t in texts]
    if len({len(ls) for ls in lines}) != 1:
        raise PolyError("export with symbolic shapes: the lowered program's structure depends "
                        "on the dimension variables (different op counts at different sizes); "
                        "only programs whose operations are the same for every size can be "
                        "exported shape-polymorphically")
    out_lines = []
    ctx = _Rewriter(variables, arg_specs, spec_text, arg_paths, constraints)
    for i, line0 in enumerate(lines[0]):
        versions = [ls[i] for ls in lines]
        if all(v == line0 for v in versions):
            out_lines.extend(ctx.plain(line0))
            continue
        skel = [_NUM.sub("#", v) for v in versions]
        if len(set(skel)) != 1:
            raise PolyError(f"export with symbolic shapes: the operation\n  {line0.strip()}\n"
                            "changes form with the dimension sizes; it cannot be generalised")
        nums = [[m.group(0) for m in _NUM.finditer(v)] for v in versions]
        spans = _type_dim_spans(line0)
        positions = [m.start() for m in _NUM.finditer(line0)]
        sym = {}       # token index -> polynomial (type dims) or ("value", poly)
        for k, pos in enumerate(positions):
            vals = [n[k] for n in nums]
            if len(set(vals)) == 1:
                continue
            if vals[0].startswith('"0x'):
                sym[k] = ("payload", vals)
                continue
            ints = [int(v) for v in vals]
            poly = _fit(variables, ints[:ncorners], points)
            if not _fits(poly, ints, variables, points):
                raise PolyError(f"export with symbolic shapes: a size in\n  {line0.strip()}\n"
                                "is not a polynomial with integer coefficients of the dimension "
                                "variables (floor division, powers, or Python control flow on "
                                "a size cannot be exported shape-polymorphically)")
            if not _in_spans(pos, spans):
                if '"stablehlo.dynamic_slice"' not in line0 and '"stablehlo.slice"' not in line0:
                    raise PolyError(f"export with symbolic shapes: the attribute of\n  "
                                    f"{line0.strip()}\ndepends on the dimension variables; "
                                    "xform cannot generalise this operation")
                sym[k] = ("attr", poly)       # a dynamic_slice size: see _dynamic_slice
                continue
            sym[k] = poly
        out_lines.extend(ctx.rewrite(line0, positions, nums[0], sym, variables, points))
    return "\n".join(out_lines) + "\n", ctx.result_shapes


class _Rewriter:
    def __init__(self, variables, arg_specs, spec_text, arg_paths, constraints=()):
        self.constraints = constraints       # [(polynomial that must be >= 0, text)]
        self.arg_paths = arg_paths
        self.variables = variables
        self.arg_specs = arg_specs
        self.spec_text = spec_text
        self.result_shapes = None
        self.func_dims = None          # var -> SSA name of its i32 scalar in this function
        self.func_args = []            # [(name, shape polys)] of the current function
        self.pending_header = None
        self.counter = 0

    def fresh(self, base="xp"):
        self.counter += 1
        return f"%{base}{self.counter}"

    # -- function headers: remember argument types; compute the dimension variables
    def _header(self, new_line, is_main=False):
        """``new_line``: the header with '?v' markers; returns the lines to emit."""
        self.func_dims = {}
        self.func_args = []
        self.arg_types = {}
        out = [_strip(new_line)]
        for m in re.finditer(r"(%arg\d+): (tensor<((?:[0-9?#]+x)*)[^>]*>)", new_line):
            name, dims = m.group(1), m.group(3).split("x")[:-1]
            self.func_args.append((name, dims))
            self.arg_types[name] = _strip(m.group(2))
        for vi, var in enumerate(self.variables):
            for name, dims in self.func_args:
                if f"?#{vi}#" in dims:
                    n = self.fresh("dim_" + var + "_")
                    out.append(f'    {n} = "stablehlo.get_dimension_size"({name}) '
                               f'{{dimension = {dims.index(f"?#{vi}#")} : i64}} : '
                               f'({self.arg_types[name]}) -> tensor<i32>')
                    self.func_dims[var] = n
                    break
            if var not in self.func_dims and is_main:
                self._solve_linear(vi, var, out)
        return out

    def _solve_linear(self, vi, var, out):
        """``var`` from an argument dimension ``k*var + c`` of main (e.g. ``2*b``)."""
        for i, shape in enumerate(self.arg_specs):
            for j, d in enumerate(shape):
                if not isinstance(d, dict) or set(d) - {(var,), ()} or (var,) not in d:
                    continue
                k, c = d[(var,)], d.get((), 0)
                name = self.func_args[i][0]
                n = self.fresh("size_")
                out.append(f'    {n} = "stablehlo.get_dimension_size"({name}) '
                           f'{{dimension = {j} : i64}} : ({self.arg_types[name]}) -> tensor<i32>')
                if c:
                    n = self.binop("subtract", n, self.const_i32(c, out), out)
                if k != 1:
                    n = self.binop("divide", n, self.const_i32(k, out), out)
                self.func_dims[var] = n
                return

    def plain(self, line):
        if "func.func" in line:
            return self._header(line)
        return [line]

    def dim_value(self, var, out):
        """SSA name of ``var`` (tensor<i32>) in the current function."""
        if var in self.func_dims:
            return self.func_dims[var]
        raise PolyError(f"export with symbolic shapes: a function of the lowered program needs "
                        f"the dimension variable {var!r} but none of its arguments has a "
                        f"dimension equal to {var!r}; functions (nested jit, calls) must take "
                        "an argument of that size")

    def poly_value(self, poly, out):
        """SSA name of a tensor<i32> holding ``poly``'s value."""
        acc = None
        for m, c in sorted(poly.items()):
            term = self.const_i32(c, out) if (c != 1 or not m) else None
            for v in m:
                d = self.dim_value(v, out)
                term = d if term is None else self.binop("multiply", term, d, out)
            acc = term if acc is None else self.binop("add", acc, term, out)
        return acc if acc is not None else self.const_i32(0, out)

    def const_i32(self, c, out, shape=""):
        n = self.fresh()
        t = f"tensor<{shape}i32>"
        out.append(f'    {n} = "stablehlo.constant"() {{value = dense<{int(c)}> : {t}}} : () -> {t}')
        return n

    def binop(self, op, a, b, out):
        n = self.fresh()
        out.append(f'    {n} = "stablehlo.{op}"({a}, {b}) : (tensor<i32>, tensor<i32>) '
                   f'-> tensor<i32>')
        return n

    def shape_tensor(self, dims, out):
        """tensor<Nxi32> of the dimensions (ints or polynomials)."""
        parts = []
        for d in dims:
            if isinstance(d, int):
                parts.append(self.const_i32(d, out, "1x"))
            else:
                s = self.poly_value(d, out)
                r = self.fresh()
                out.append(f'    {r} = "stablehlo.reshape"({s}) : (tensor<i32>) -> tensor<1xi32>')
                parts.append(r)
        n = self.fresh()
        if not parts:
            out.append(f'    {n} = "stablehlo.constant"() {{value = dense<> : tensor<0xi32>}} '
                       f': () -> tensor<0xi32>')
            return n, "tensor<0xi32>"
        t = f"tensor<{len(parts)}xi32>"
        out.append(f'    {n} = "stablehlo.concatenate"({", ".join(parts)}) {{dimension = 0 : i64}}'
                   f' : ({", ".join(["tensor<1xi32>"] * len(parts))}) -> {t}')
        return n, t

    def rewrite(self, *a):
        return [_strip(x) for x in self._rewrite(*a)]

    def _rewrite(self, line, positions, nums0, sym, variables, points):
        out = []
        # New text: symbolic type dims become '?' (with a marker '?v' for plain variables,
        # used to find dimension sources; markers are stripped before returning).
        pieces, last = [], 0
        type_polys = []
        for k, pos in enumerate(positions):
            if k in sym and not isinstance(sym[k], tuple):
                poly = sym[k]
                pieces.append(line[last:pos])
                plain = [m for m in poly if m] == [m for m in poly] and len(poly) == 1 and \
                    len(next(iter(poly))) == 1 and next(iter(poly.values())) == 1
                pieces.append(f"?#{variables.index(next(iter(poly))[0])}#" if plain else "?")
                last = pos + len(nums0[k])
                type_polys.append((pos, poly))
        pieces.append(line[last:])
        new = "".join(pieces)
        attr_syms = {k for k, v in sym.items() if isinstance(v, tuple) and v[0] == "attr"}
        payloads = {k: v for k, v in sym.items() if isinstance(v, tuple) and v[0] == "payload"}
        splat = None
        if payloads and type_polys and len(payloads) == 1:
            (_, (_, vals)), = payloads.items()
            splat = _uniform(vals, line)
            if splat is not None:
                payloads = {}
        if "func.func" in line:
            res = self._header(new, " @main(" in line)
            if " @main(" in line:
                self.result_shapes = self._result_shapes(line, sym, positions)
                res += self._assertions(out)
            return res + out
        opm = _OPNAME.search(line)
        op = opm.group(1) if opm else ""
        if attr_syms:
            if op == "stablehlo.slice":
                return self._slice(line, new, positions, nums0, sym, out)
            return self._dynamic_slice(line, new, positions, nums0, sym, out)
        result_type = _strip(new.rsplit("->", 1)[-1].strip()) if "->" in new else ""
        res_dims = self._result_dims(line, positions, nums0, sym)
        lhs = line.split("=", 1)[0].strip() if "=" in line.split('"', 1)[0] else None
        if payloads:
            if op != "stablehlo.constant" or type_polys:
                raise PolyError(f"export with symbolic shapes: the constant data of\n  "
                                f"{line.strip()}\ndepends on the dimension variables")
            (k, (_, vals)), = payloads.items()
            elem = re.search(r"tensor<(?:[0-9]+x)*([a-z0-9]+)>", line).group(1)
            decoded = [_decode_scalar(v, elem) for v in vals]
            if any(d is None for d in decoded):
                raise PolyError(f"export with symbolic shapes: the constant\n  {line.strip()}\n"
                                "depends on the dimension variables and is not a scalar integer")
            poly = _fit(variables, decoded[:2 ** len(variables)], points)
            if not _fits(poly, decoded, variables, points):
                raise PolyError(f"export with symbolic shapes: the constant\n  {line.strip()}\n"
                                "is not a polynomial of the dimension variables (does the program "
                                "branch on a size, e.g. `if x.shape[0] > n`? that cannot be "
                                "exported shape-polymorphically)")
            v = self.poly_value(poly, out)
            out.append(f'    {lhs} = "stablehlo.convert"({v}) : (tensor<i32>) -> {result_type}')
            return out
        if not type_polys:
            return [_strip(new)]
        sym_result = any(d is not None and not isinstance(d, int) for d in res_dims)
        if not sym_result or op not in _NEEDS_SHAPE:
            if op in _NO_INFERENCE and sym_result:
                raise PolyError(f"export with symbolic shapes: {op} with a symbolic result "
                                f"shape is not supported:\n  {line.strip()}")
            return [_strip(new)]
        shape, st = self.shape_tensor(res_dims, out)
        in_part = new[new.index('"(') + 2:]
        operands = in_part[:in_part.index(")")]
        attrs = ""
        am = re.search(r"\)\s*(\{.*\})\s*:", new)
        if am:
            attrs = " " + am.group(1)
        sig = new.rsplit(" : ", 1)[1]
        in_types = sig[sig.index("(") + 1:sig.index(")")]
        if op == "stablehlo.broadcast_in_dim":
            out.append(f'    {lhs} = "stablehlo.dynamic_broadcast_in_dim"({operands}, {shape})'
                       f'{attrs} : ({in_types}, {st}) -> {result_type}')
        elif op == "stablehlo.reshape":
            out.append(f'    {lhs} = "stablehlo.dynamic_reshape"({operands}, {shape}) : '
                       f'({in_types}, {st}) -> {result_type}')
        elif op == "stablehlo.iota":
            out.append(f'    {lhs} = "stablehlo.dynamic_iota"({shape}){attrs} : ({st}) -> '
                       f'{result_type}')
        elif op == "stablehlo.constant":
            val = splat or re.search(r'dense<("0x[0-9A-Fa-f]+"|[^>]*)>', line).group(1)
            elem = re.search(r"tensor<(?:[0-9]+x)*([^>]*)>", line).group(1)
            if val.startswith('"0x') and (len(val) - 4) // 2 != _ELEM_BYTES.get(elem, -1):
                raise PolyError(f"export with symbolic shapes: a non-splat constant of "
                                f"symbolic shape:\n  {line.strip()}")
            s = self.fresh()
            out.append(f'    {s} = "stablehlo.constant"() {{value = dense<{val}> : '
                       f'tensor<{elem}>}} : () -> tensor<{elem}>')
            out.append(f'    {lhs} = "stablehlo.dynamic_broadcast_in_dim"({s}, {shape}) '
                       f'{{broadcast_dimensions = array<i64>}} : (tensor<{elem}>, {st}) -> '
                       f'{result_type}')
        return out

    def _attr_list(self, line, name, positions, nums0, sym):
        m = re.search(name + r" = array<i64: ([^>]*)>", line)
        vals = []
        for k, pos in enumerate(positions):
            if m and m.start(1) <= pos < m.end(1):
                v = sym.get(k)
                vals.append(v[1] if isinstance(v, tuple) else int(nums0[k]))
        return vals

    def _slice(self, line, new, positions, nums0, sym, out):
        """``slice`` with symbolic bounds -> ``real_dynamic_slice`` (refinement folds it)."""
        lhs = line.split("=", 1)[0].strip()
        x = re.search(r'"stablehlo.slice"\(([^)]*)\)', new).group(1).strip()
        sig = new.rsplit(" : ", 1)[1]
        in_type = sig[sig.index("(") + 1:sig.rindex(")")].strip()
        result_type = sig.rsplit("->", 1)[1].strip()
        vecs = [self.shape_tensor(self._attr_list(line, n, positions, nums0, sym), out)[0]
                for n in ("start_indices", "limit_indices", "strides")]
        t = f"tensor<{len(self._attr_list(line, 'strides', positions, nums0, sym))}xi32>"
        out.append(f'    {lhs} = "stablehlo.real_dynamic_slice"({x}, {", ".join(vecs)}) : '
                   f'({in_type}, {t}, {t}, {t}) -> {result_type}')
        return out

    def _dynamic_slice(self, line, new, positions, nums0, sym, out):
        """``dynamic_slice`` with symbolic slice sizes -> ``real_dynamic_slice`` with the
        start indices clamped into range as ``dynamic_slice`` does."""
        lhs = line.split("=", 1)[0].strip()
        operands = [o.strip() for o in
                    re.search(r'"stablehlo.dynamic_slice"\(([^)]*)\)', new).group(1).split(",")]
        sig = new.rsplit(" : ", 1)[1]
        in_types = _split_types(sig[sig.index("(") + 1:sig.rindex(")")])
        result_type = sig.rsplit("->", 1)[1].strip()
        m = re.search(r"slice_sizes = array<i64: ([^>]*)>", line)
        sizes = []
        for k, pos in enumerate(positions):
            if m.start(1) <= pos < m.end(1):
                v = sym.get(k)
                sizes.append(v[1] if isinstance(v, tuple) else int(nums0[k]))
        x, idx = operands[0], operands[1:]
        starts, size_parts = [], []
        zero = self.const_i32(0, out)
        for j, (i, size) in enumerate(zip(idx, sizes)):
            if in_types[1 + j] != "tensor<i32>":
                c = self.fresh()
                out.append(f'    {c} = "stablehlo.convert"({i}) : ({in_types[1 + j]}) -> '
                           'tensor<i32>')
                i = c
            dim = self.fresh()
            out.append(f'    {dim} = "stablehlo.get_dimension_size"({x}) {{dimension = {j} : '
                       f'i64}} : ({in_types[0]}) -> tensor<i32>')
            sz = self.const_i32(size, out) if isinstance(size, int) else \
                self.poly_value(size, out)
            hi = self.binop("subtract", dim, sz, out)
            st = self.fresh()
            out.append(f'    {st} = "stablehlo.clamp"({zero}, {i}, {hi}) : (tensor<i32>, '
                       'tensor<i32>, tensor<i32>) -> tensor<i32>')
            for v, acc in ((st, starts), (sz, size_parts)):
                r = self.fresh()
                out.append(f'    {r} = "stablehlo.reshape"({v}) : (tensor<i32>) -> tensor<1xi32>')
                acc.append(r)
        n = len(sizes)
        t = f"tensor<{n}xi32>"
        vecs = []
        for parts in (starts, size_parts):
            c = self.fresh()
            out.append(f'    {c} = "stablehlo.concatenate"({", ".join(parts)}) {{dimension = 0 : '
                       f'i64}} : ({", ".join(["tensor<1xi32>"] * n)}) -> {t}')
            vecs.append(c)
        # limits = starts + sizes as vectors: once refinement makes the sizes constant,
        # StableHLO's simplification turns this back into a dynamic_slice
        limits = self.fresh()
        out.append(f'    {limits} = "stablehlo.add"({vecs[0]}, {vecs[1]}) : ({t}, {t}) -> {t}')
        strides = self.fresh()
        out.append(f'    {strides} = "stablehlo.constant"() {{value = dense<1> : {t}}} : () -> {t}')
        out.append(f'    {lhs} = "stablehlo.real_dynamic_slice"({x}, {vecs[0]}, {limits}, '
                   f'{strides}) : ({in_types[0]}, {t}, {t}, {t}) -> {result_type}')
        return out

    def _result_dims(self, line, positions, nums0, sym):
        """Dims of the (single) result type: ints or polynomials; [] if none."""
        if "->" not in line:
            return []
        cut = line.rindex("->")
        m = re.search(r"tensor<((?:[0-9]+x)*)", line[cut:])
        if not m:
            return []
        start = cut + m.start(1)
        dims = []
        for k, pos in enumerate(positions):
            if start <= pos < cut + m.end(1):
                p = sym.get(k)
                dims.append(p if p is not None and not isinstance(p, tuple) else int(nums0[k]))
        return dims

    def _result_shapes(self, line, sym, positions):
        cut = line.index(") -> (")
        shapes = []
        nums = list(_NUM.finditer(line))
        for m in re.finditer(r"tensor<((?:[0-9]+x)*)", line[cut:]):
            a, b = cut + m.start(1), cut + m.end(1)
            dims = []
            for k, nm in enumerate(nums):
                if a <= nm.start() < b:
                    p = sym.get(k)
                    dims.append(p if p is not None and not isinstance(p, tuple)
                                else int(nm.group(0)))
            shapes.append(dims)
        return shapes

    def _assertions(self, out):
        """JAX's shape assertions for ``main``: every variable >= 1, sizes consistent."""
        lines = []
        first = {}
        for i, shape in enumerate(self.arg_specs):
            for j, d in enumerate(shape):
                if isinstance(d, dict) and len(d) == 1 and list(d.values()) == [1] and \
                        len(next(iter(d))) == 1:
                    v = next(iter(d))[0]
                    first.setdefault(v, (i, j))
        obtained = "".join(f"'{v}' = {{{n}}} from specification '{v}' for dimension "
                           f"{self.arg_paths[i]}.shape[{j}] (= {{{n}}}), "
                           for n, (v, (i, j)) in enumerate(sorted(first.items())))
        tail = (f" Using the following polymorphic shapes specifications: {self.spec_text}. "
                f"Obtained dimension variables: {obtained}. Please see "
                "https://docs.jax.dev/en/latest/export/shape_poly.html#shape-assertion-errors "
                "for more details.")
        values = [self.dim_value(v, lines) for v, _ in sorted(first.items())]
        if not values:
            return lines
        for n, (v, _) in enumerate(sorted(first.items())):
            one = self.const_i32(1, lines)
            pred = self.fresh()
            lines.append(f'    {pred} = "stablehlo.compare"({values[n]}, {one}) '
                         '{comparison_direction = #stablehlo<comparison_direction GE>, '
                         'compare_type = #stablehlo<comparison_type SIGNED>} : '
                         '(tensor<i32>, tensor<i32>) -> tensor<i1>')
            msg = ("Input shapes do not match the polymorphic shapes specification. "
                   f"Expected value >= 1 for dimension variable '{v}'." + tail)
            lines.append(self._assert(pred, values, msg))
        for i, shape in enumerate(self.arg_specs):
            for j, d in enumerate(shape):
                if not isinstance(d, dict):
                    continue
                if first.get(_plain(d)) == (i, j):
                    continue
                name = self.func_args[i][0]
                got = self.fresh()
                lines.append(f'    {got} = "stablehlo.get_dimension_size"({name}) '
                             f'{{dimension = {j} : i64}} : ({self.arg_types[name]}) -> tensor<i32>')
                want = self.poly_value(d, lines)
                pred = self.fresh()
                lines.append(f'    {pred} = "stablehlo.compare"({got}, {want}) '
                             '{comparison_direction = #stablehlo<comparison_direction EQ>, '
                             'compare_type = #stablehlo<comparison_type SIGNED>} : '
                             '(tensor<i32>, tensor<i32>) -> tensor<i1>')
                k = len(values)
                msg = ("Input shapes do not match the polymorphic shapes specification. "
                       f"Found inconsistency between dimension size {self.arg_paths[i]}.shape[{j}] "
                       f"(= {{{k}}}) and the specification '{poly_str(d)}' (= {{{k + 1}}})."
                       + tail)
                lines.append(self._assert(pred, values + [got, want], msg))
        for diff, text in self.constraints:
            got = self.poly_value(diff, lines) if isinstance(diff, dict) else \
                self.const_i32(diff, lines)
            zero = self.const_i32(0, lines)
            pred = self.fresh()
            lines.append(f'    {pred} = "stablehlo.compare"({got}, {zero}) '
                         '{comparison_direction = #stablehlo<comparison_direction GE>, '
                         'compare_type = #stablehlo<comparison_type SIGNED>} : '
                         '(tensor<i32>, tensor<i32>) -> tensor<i1>')
            k = len(values)
            msg = (f"Input shapes do not match the symbolic shape constraint {text}. Expected "
                   f"'{poly_str(diff) if isinstance(diff, dict) else diff}' to be greater or "
                   f"equal to 0, but found {{{k}}}. " + tail)
            lines.append(self._assert(pred, values + [got], msg))
        return lines

    def _assert(self, pred, values, msg):
        msg = msg.replace("\\", "\\\\").replace('"', '\\"')
        types = ", ".join(["tensor<i1>"] + ["tensor<i32>"] * len(values))
        return (f'    "stablehlo.custom_call"({pred}, {", ".join(values)}) {{api_version = 2 : i32, '
                f'call_target_name = "shape_assertion", error_message = "{msg}", '
                f'has_side_effect = true}} : ({types}) -> ()')


def _split_types(s):
    """'tensor<2x3xf32>, tensor<i32>' -> the types (commas inside <...> kept)."""
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _plain(d):
    if len(d) == 1 and list(d.values()) == [1] and len(next(iter(d))) == 1:
        return next(iter(d))[0]
    return None


def _uniform(vals, line):
    """The one-element payload if every corner's constant repeats a single element."""
    elem = re.search(r"tensor<(?:[0-9]+x)*([^>]*)>", line)
    width = _ELEM_BYTES.get(elem.group(1)) if elem else None
    if not width:
        return None
    first = None
    for v in vals:
        hexs = v[3:-1]
        unit = hexs[:2 * width]
        if not unit or hexs != unit * (len(hexs) // len(unit)) or len(hexs) % len(unit):
            return None
        if first is not None and unit != first:
            return None
        first = unit
    return f'"0x{first}"'


_ELEM_BYTES = {"i1": 1, "i8": 1, "ui8": 1, "i4": 1, "ui4": 1, "i16": 2, "ui16": 2, "f16": 2,
               "bf16": 2, "i32": 4, "ui32": 4, "f32": 4, "i64": 8, "ui64": 8, "f64": 8,
               "complex<f32>": 8, "complex<f64>": 16, "f8E4M3FN": 1, "f8E5M2": 1}


def _strip(s):
    return re.sub(r"\?#\d+#", "?", s)


_NEEDS_SHAPE = {"stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.iota",
                "stablehlo.constant"}
_NO_INFERENCE = {"stablehlo.pad",
                 
                 "stablehlo.custom_call", "stablehlo.rng", "stablehlo.rng_bit_generator",
                 "stablehlo.reduce_window", "stablehlo.select_and_scatter", "stablehlo.fft"}
