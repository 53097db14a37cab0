"""``python -m benchmarks.summary [bench_results.json]``: the Markdown ratio table
(xform/JAX, xform/NumPy, xform/floor per case and metric) of a results file, the
table README's "Benchmarks" section is regenerated from."""
import json
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    path = argv[0] if argv else "bench_results.json"
    from benchmarks import summary_table
    with open(path) as fh:
        print(summary_table(json.load(fh)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
