"""Checking an untrusted exported StableHLO module without risking this process.

jaxlib's portable-artifact decoder trusts its input: crafted or corrupted bytecode can
corrupt the heap of the process that decodes it (observed: ``realloc(): invalid next
size`` after a one-byte flip).  No amount of checking in Python can rule that out, so
``xform.export.deserialize`` has the module decoded and verified once in a short-lived
child interpreter (``check_module``): a crash there is a ValueError here.  The child
runs with glibc's heap checking on where available, so silent corruption aborts it too.
The verdict is cached by the module's SHA-256 for the life of the process, and modules
this process serialized itself are known good (``mark_trusted``), so each artifact
costs one child at most (about a second: an interpreter start plus jaxlib's import).

The child decodes the bytecode, runs MLIR's verifier, and reports the public ``main``
function's argument and result types; the parent compares them with the Exported's
calling convention.  Importing this module imports nothing from jax/jaxlib.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import threading

_verdicts: dict = {}            # sha256 -> (in_types, out_types) of a module checked good
_lock = threading.Lock()
_TIMEOUT_S = 300


def _digest(blob) -> str:
    return hashlib.sha256(bytes(blob)).hexdigest()


def mark_trusted(blob, in_types=None, out_types=None) -> None:
    """Record a module this process produced (no check needed when it comes back)."""
    _verdicts.setdefault(_digest(blob), (in_types, out_types))


def _malloc_checking_env():
    """glibc's malloc consistency checks for the child (abort on heap corruption)."""
    for lib in ("/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0",
                "/usr/lib/aarch64-linux-gnu/libc_malloc_debug.so.0",
                "/lib64/libc_malloc_debug.so.0", "/usr/lib64/libc_malloc_debug.so.0"):
        if os.path.exists(lib):
            pre = os.environ.get("LD_PRELOAD", "")
            return {"LD_PRELOAD": (pre + " " + lib).strip(), "MALLOC_CHECK_": "3"}
    return {"MALLOC_CHECK_": "3"}


_SCRIPT = os.path.abspath(__file__)   # the child runs this file as a script: no xform import


def check_module(blob):
    """``(in_types, out_types)`` of the module's public ``main`` (MLIR type strings), or
    ValueError saying why the bytes are not a usable module; never crashes this process."""
    key = _digest(blob)
    got = _verdicts.get(key)
    if got is not None:
        return got
    with _lock:
        got = _verdicts.get(key)
        if got is not None:
            return got
        env = dict(os.environ)
        env.update(_malloc_checking_env())
        env.pop("XLA_FLAGS", None)
        env["TF_CPP_MIN_LOG_LEVEL"] = "3"
        paths = [p if p else os.getcwd() for p in sys.path]
        try:
            p = subprocess.run([sys.executable, _SCRIPT, json.dumps(paths)],
                               input=bytes(blob), capture_output=True, env=env,
                               timeout=_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ValueError(f"the exported module could not be checked: decoding it took "
                             f"more than {_TIMEOUT_S} s") from None
        out = p.stdout.decode("utf-8", "replace").strip().splitlines()
        result = None
        if out and out[-1].startswith("{"):
            try:
                result = json.loads(out[-1])
            except ValueError:
                result = None
        if result is None:
            how = (f"signal {-p.returncode}" if p.returncode < 0 else
                   f"exit status {p.returncode}")
            tail = p.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
            raise ValueError(f"the exported module is corrupt: decoding it crashed the checking "
                             f"process ({how}: {' | '.join(tail)[:300]})")
        if not result.get("ok"):
            raise ValueError(f"the exported module is not valid StableHLO: "
                             f"{result.get('error', '')[:600]}")
        verdict = (tuple(result["in"]), tuple(result["out"]))
        _verdicts[key] = verdict
        return verdict


def _child_context():
    """An MLIR context with the dialects an exported module may use (StableHLO, CHLO,
    Shardy and jaxlib's upstream ones), as the runtime builds its own, made by
    ``mlir_context.py`` loaded by path (the child does not import xform)."""
    spec = importlib.util.spec_from_file_location(
        "_xform_mlir_context", os.path.join(os.path.dirname(_SCRIPT), "mlir_context.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.new_mlir_context(shardy=True)


def _func_types(ir, op):
    ft = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
    return [str(t) for t in ft.inputs], [str(t) for t in ft.results]


def _child_main():
    """In the child: decode and verify the module read from stdin; print one JSON line."""
    blob = sys.stdin.buffer.read()
    try:
        from jaxlib import _jax  # deferred: keeps `import xform` light
        from jaxlib.mlir import ir  # deferred: keeps `import xform` light
        ctx = _child_context()
        with ctx:
            try:
                module = _jax.mlir.deserialize_portable_artifact(blob, context=ctx)
            except Exception as e:  # noqa: BLE001
                raise ValueError(f"cannot decode it: {str(e)[:400]}") from None
            module.operation.verify()
            symtab = ir.SymbolTable(module.operation)
            try:
                main = symtab["main"]
            except KeyError:
                raise ValueError("it has no function named 'main'") from None
            if main.operation.name != "func.func":
                raise ValueError(f"its 'main' is a {main.operation.name}, not a func.func")
            vis = main.attributes["sym_visibility"] if "sym_visibility" in main.attributes \
                else None
            if vis is not None and ir.StringAttr(vis).value != "public":
                raise ValueError("its 'main' function is not public")
            ins, outs = _func_types(ir, main)
            module.operation.get_asm(enable_debug_info=False)   # the printer walks it all
        print(json.dumps({"ok": True, "in": ins, "out": outs}), flush=True)
    except Exception as e:  # noqa: BLE001  (reported to the parent)
        print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}), flush=True)


if __name__ == "__main__":
    sys.path[:0] = json.loads(sys.argv[1])
    sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(_SCRIPT)]
    _child_main()
