"""``python -m xform.run script.py [args]``: run a script with ``import jax`` aliased to
xform (``xform.compat.alias_jax``); ``python -m xform.run -m package.module`` runs a
module the same way."""
import runpy
import sys
from xform.compat import alias_jax


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    alias_jax()
    if argv[0] == "-m":
        if len(argv) < 2:
            print("xform.run: -m needs a module name", file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
