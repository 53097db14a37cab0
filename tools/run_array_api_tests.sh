#!/usr/bin/env bash
# Run the Python Array API conformance suite (data-apis/array-api-tests) against
# xform.numpy the way JAX's CI runs it against jax.numpy.
#
#   tools/run_array_api_tests.sh SUITE_DIR SKIPS_FILE [pytest args...]
#
# SUITE_DIR   a checkout of github.com/data-apis/array-api-tests at the commit JAX's
#             .github/workflows/jax-array-api.yml pins, with its `array-api`
#             submodule (the spec) present.  Keep it outside this repository.
# SKIPS_FILE  JAX's tests/array_api_skips.txt at the same JAX release.
#
# Environment: PYTHON (default: python), MODULE (default: xform.numpy; set
# MODULE=jax.numpy for JAX's count under the same settings), MAX_EXAMPLES (default 20).
# Extra arguments go to pytest, e.g. a single file
# (array_api_tests/test_creation_functions.py), -x or -k EXPR.
# The suite needs pytest-json-report, hypothesis and ndindex importable.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,17p' "$0"; exit 2
fi
suite=$(cd "$1" && pwd); skips=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2
repo=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -d "$suite/array-api/src" ]; then
  echo "error: $suite/array-api (the spec submodule) is missing; run" \
       "'git submodule update --init' in the suite checkout" >&2
  exit 2
fi
tests=array_api_tests/
for a in "$@"; do case "$a" in array_api_tests/*) tests=;; esac; done
cd "$suite"
export ARRAY_API_TESTS_MODULE="${MODULE:-xform.numpy}"
export JAX_ENABLE_X64=true
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python}" -m pytest $tests --skips-file "$skips" --derandomize --disable-deadline \
  --max-examples "${MAX_EXAMPLES:-20}" -p no:cacheprovider "$@"
