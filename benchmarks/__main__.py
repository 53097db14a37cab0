"""``python -m benchmarks [--quick] [--json PATH] [--only NAME ...] [--rounds N]
[--profile cpu|a100|h100|calibrated]``: see ``benchmarks``."""
import argparse
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks",
                                 description="xform vs JAX vs NumPy benchmarks and the "
                                             "dispatch-tax report")
    ap.add_argument("--quick", action="store_true",
                    help="smaller sizes and fewer rounds (under a minute)")
    ap.add_argument("--json", default="bench_results.json", metavar="PATH",
                    help="where to write the results (default: bench_results.json; "
                         "'' to skip)")
    ap.add_argument("--only", nargs="*", metavar="NAME",
                    help="run only cases whose name contains one of these substrings")
    ap.add_argument("--rounds", type=int, default=None,
                    help="timing rounds per case (default: 3 quick, 7 full)")
    ap.add_argument("--profile", default="cpu", choices=("cpu", "a100", "h100", "calibrated"),
                    help="device model for the dispatch report's T_compute/T_memory")
    ap.add_argument("--clock", default="wall", choices=("wall", "process"),
                    help="clock of the steady-state timings: wall time, or the process's "
                         "CPU time (robust on a loaded, shared machine)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    a = ap.parse_args(argv)
    from xform import profile
    from benchmarks import run
    from benchmarks.cases import CASES
    if a.list:
        for name, _, desc, *_ in CASES:
            print(f"{name:<32} {desc}")
        return 0
    if a.rounds is not None and a.rounds < 1:
        ap.error("--rounds must be >= 1")
    prof = {"cpu": profile.CPU, "a100": profile.A100, "h100": profile.H100}.get(a.profile) \
        or profile.calibrate_cpu()
    from benchmarks import timing
    timing.set_clock(a.clock)
    run(quick=a.quick, json_path=a.json or None, only=a.only, rounds=a.rounds, profile=prof,
        clock=a.clock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
