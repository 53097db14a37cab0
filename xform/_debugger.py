"""``xform.debug.breakpoint``: a text debugger (JAX's ``jdb``) over the caller's frames.

At the call the Python frames above it are captured (their source position, globals and
locals).  Locals that are traced arrays cannot be shown while tracing, so they travel
through ``debug.callback``: the debugger opens when the program runs -- immediately
outside ``jit``, at each execution inside -- with those values concrete.
"""
from __future__ import annotations

import cmd
import inspect
import linecache
import os
import pprint
import sys
import traceback
from xform._src import interpreters, lowering, primitives
from xform._src.interpreters import core
from xform.tree_util import tree_flatten, tree_unflatten

_PKG = os.path.dirname(os.path.abspath(__file__))


def _engine_dirs():
    return tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
                 for m in (interpreters, lowering, primitives))


class _Frame:
    def __init__(self, filename, lineno, source, offset, globals_, locals_):
        self.filename, self.lineno = filename, lineno
        self.source, self.offset = source, offset
        self.globals, self.locals = globals_, locals_


def _internal(filename):
    f = os.path.abspath(filename)
    return f.startswith((_PKG + os.sep,) + _engine_dirs())


def _source(frame):
    """The frame's file as lines, and the index of its current line (None if unknown)."""
    lines = [ln.rstrip("\n") for ln in linecache.getlines(frame.f_code.co_filename,
                                                          frame.f_globals)]
    off = frame.f_lineno - 1
    return (lines, off) if 0 <= off < len(lines) else ([], None)


class _Jdb(cmd.Cmd):
    prompt = "(jdb) "

    def __init__(self, frames, stdin=None, stdout=None):
        super().__init__(stdin=stdin, stdout=stdout)
        self.use_rawinput = stdin is None
        self.frames, self.index = frames, 0
        self.intro = "Entering jdb:"

    def _say(self, text):
        print(text, file=self.stdout)

    def _eval(self, expr):
        fr = self.frames[self.index]
        env = dict(fr.globals)
        env.update(fr.locals)
        return eval(expr, {}, env)

    def _fail(self):
        etype, value = sys.exc_info()[:2]
        self._say("*** " + traceback.format_exception_only(etype, value)[-1].strip())

    def _show(self, expr, fmt):
        try:
            self._say(fmt(self._eval(expr)))
        except Exception:
            self._fail()

    def default(self, line):
        """An expression: evaluate it in the current frame and print its repr."""
        self._show(line, repr)

    def do_p(self, arg):
        """p expression: print the value of an expression in the current frame."""
        self._show(arg, repr)

    def do_pp(self, arg):
        """pp expression: pretty-print the value of an expression."""
        self._show(arg, pprint.pformat)

    def _context(self, around=2):
        fr = self.frames[self.index]
        out = [f"> {fr.filename}({fr.lineno})"]
        if fr.offset is not None:
            for i, line in enumerate(fr.source):
                if fr.offset - 1 - around <= i <= fr.offset + around:
                    out.append(("->  " if i == fr.offset else "    ") + line)
        self._say("\n".join(out))

    def do_up(self, arg):
        """u(p): move to the caller's frame."""
        if self.index == len(self.frames) - 1:
            self._say("At topmost frame.")
        else:
            self.index += 1
        self._context()
    do_u = do_up

    def do_down(self, arg):
        """d(own): move to the callee's frame."""
        if self.index == 0:
            self._say("At bottommost frame.")
        else:
            self.index -= 1
        self._context()
    do_d = do_down

    def do_list(self, arg):
        """l(ist): show the source around the current line."""
        self._context(around=5)
    do_l = do_list

    def do_where(self, arg):
        """w(here) / bt: the captured stack, most recent frame last."""
        out = ["Traceback:"]
        for fr in reversed(self.frames):
            out.append(f'  File "{fr.filename}", line {fr.lineno}')
            out.append("    " + (fr.source[fr.offset].strip() if fr.offset is not None
                                 else "<no source>"))
        self._say("\n".join(out))
    do_w = do_bt = do_where

    def do_continue(self, arg):
        """c(ont(inue)): leave the debugger and continue the program."""
        return True
    do_c = do_cont = do_continue

    def do_quit(self, arg):
        """q(uit) / exit: leave the debugger and exit the program."""
        sys.exit(0)
    do_q = do_exit = do_EOF = do_quit


def breakpoint(*, backend=None, filter_frames=True, num_frames=None, ordered=False,  # noqa: A001
               token=None, **kwargs):
    """Enter a text debugger (``(jdb)``: ``p``/``pp`` expression, ``u``/``d``, ``l``,
    ``w``, ``c``, ``q``) over the calling frames.  Under ``jit`` it opens each time the
    compiled program reaches it, with the traced locals as concrete arrays.  ``stdin`` /
    ``stdout`` keyword arguments redirect its input and output."""
    from xform import debug  # deferred: import cycle
    unknown = set(kwargs) - {"stdin", "stdout"}
    if unknown:
        raise TypeError(f"breakpoint: unexpected keyword arguments {sorted(unknown)}")
    if backend not in (None, "cli"):
        raise ValueError(f"breakpoint: unknown debugger backend {backend!r}; xform has "
                         "the text debugger 'cli'")
    captured = []
    f = inspect.currentframe().f_back
    while f is not None:
        if not (filter_frames and _internal(f.f_code.co_filename)):
            captured.append(f)
        f = f.f_back
    if num_frames is not None:
        captured = captured[:num_frames]
    static, dynamic = [], []
    for fr in captured:
        leaves, tree = tree_flatten(dict(fr.f_locals))
        slots = []
        for leaf in leaves:
            if isinstance(leaf, core.Tracer):
                slots.append(("d", len(dynamic)))
                dynamic.append(leaf)
            else:
                slots.append(("s", leaf))
        src, off = _source(fr)
        static.append((fr.f_code.co_filename, fr.f_lineno, src, off, fr.f_globals, tree,
                       slots))
    del captured, f

    def run(*values):
        frames = []
        for filename, lineno, src, off, glb, tree, slots in static:
            leaves = [values[v] if k == "d" else v for k, v in slots]
            frames.append(_Frame(filename, lineno, src, off, glb, tree_unflatten(tree,
                                                                                  leaves)))
        _Jdb(frames, **kwargs).cmdloop()

    debug.callback(run, *dynamic, ordered=ordered)
