#!/usr/bin/env bash
# `make mutation`: mutmut over the pure modules (issue 15; not in CI: too slow). docs/testing.md "Mutation testing"
# has the measured kill rates and every surviving mutant with its explanation.
#
#   scripts/mutation.sh                      every module; mutants with a verdict are not run again (restartable:
#                                            interrupt it and run it again, it continues where it stopped)
#   scripts/mutation.sh stats lock           only these modules (still only their mutants without a verdict)
#   scripts/mutation.sh --recheck [mods]     run the survivors (and "no tests") again, e.g. after adding tests
#   scripts/mutation.sh --report [mods]      print the table only
#
# Modules: scoring (coco, and scoring_validation/_backends/_results/_loading) sanity warehouse_checks verify submission lock (bench_assets/rf100vl/) and stats bootstrap
# (bench_assets/augbench/). MUTATION_CHILDREN (default 2) mutants run at a time, under `nice -n 10`.
# Exit status: non-zero when a module has unchecked mutants or the kill rate of the selection is under
# MUTATION_MIN (default 90) percent.
#
# How mutmut 3 meets this layout (setup.cfg [mutmut]): it copies bench_assets/ (source_paths) and tests/ into
# mutants/ and runs pytest in-process from there with mutants/ first on sys.path. The repo is an editable
# install, but setuptools' editable finder sits after the path finder on sys.meta_path, so `bench_assets` imports
# from mutants/ (the copy carrying the mutants) while resources/ and definitions.py, not copied, still import
# from the checkout (REPO_ROOT stays the checkout: dbt_report/, recipes/). pyproject's addopts carry
# `--dist loadfile`, so setup.cfg adds `-n0`. The test selection (setup.cfg) is the fast tests of these modules;
# mutmut maps each function to the tests that call it and runs only those, fastest first, stopping at the
# first failure. Changing the selection in setup.cfg resets every verdict (mutmut fingerprints it); tests added
# to files already selected are picked up incrementally, which is why survivors need --recheck.
set -euo pipefail
cd "$(dirname "$0")/.."

# Native thread pools pinned to one thread (hotcoco is Rust/rayon, faster_coco_eval C++/OpenMP, numpy's BLAS):
# mutmut forks a worker per mutant, and a pool created before a fork leaves the child waiting on threads that do
# not exist (seen: sanity mutants hung at 0 s CPU under process_isolation = fork; setup.cfg now uses forkserver).
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 RAYON_NUM_THREADS=1

PY=.venv/bin/python
MUTMUT=.venv/bin/mutmut
CHILDREN=${MUTATION_CHILDREN:-2}
MIN=${MUTATION_MIN:-90}

declare -A PATHS=(
  [scoring]=bench_assets/rf100vl/scoring/coco.py [scoring_validation]=bench_assets/rf100vl/scoring/validation.py
  [scoring_backends]=bench_assets/rf100vl/scoring/backends.py [scoring_results]=bench_assets/rf100vl/scoring/results.py
  [scoring_loading]=bench_assets/rf100vl/scoring/loading.py [sanity]=bench_assets/rf100vl/scoring/sanity.py
  [warehouse_checks]=bench_assets/rf100vl/report/warehouse_checks.py [verify]=bench_assets/rf100vl/datasets/verify.py
  [submission]=bench_assets/rf100vl/submission/build.py [lock]=bench_assets/rf100vl/datasets/lock.py
  [stats]=bench_assets/augbench/stats.py [bootstrap]=bench_assets/augbench/bootstrap.py
)
ORDER=(stats bootstrap sanity warehouse_checks verify submission scoring scoring_validation scoring_backends
       scoring_results scoring_loading lock)  # lock last (issue 15)

mode=run
mods=()
for arg in "$@"; do
  case "$arg" in
    --recheck) mode=recheck ;;
    --report) mode=report ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) [[ -n "${PATHS[$arg]:-}" ]] || { echo "unknown module '$arg' (one of: ${ORDER[*]})" >&2; exit 2; }
       mods+=("$arg") ;;
  esac
done
[[ ${#mods[@]} -gt 0 ]] || mods=("${ORDER[@]}")
files=()
for m in "${mods[@]}"; do files+=("${PATHS[$m]}"); done

# Mutant names to run: those of the selected files whose verdict is missing or "no tests" (run), or survived/no
# tests (recheck). Before the first run there are no meta files yet: then the module globs.
select_names() {
  "$PY" - "$1" "${files[@]}" <<'EOF'
import json, sys
from pathlib import Path
mode, files = sys.argv[1], sys.argv[2:]
for f in files:
    meta = Path("mutants") / (f + ".meta")
    if not meta.exists():
        print(f[:-3].replace("/", ".") + ".*")
        continue
    for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
        # "no tests" (5, 33) is no verdict on the mutant: a run retries it, in case tests for it were added since
        if code in (None, 5, 33) if mode == "run" else code in (0, 5, 33):
            print(name)
EOF
}

# --recheck: forget which functions the test_edges_* tests call, so mutmut maps them again. mutmut maps a test to
# the functions it calls once, when the test is new; a test whose body grew (or a module that gained functions,
# as lock.py v2 did) keeps its old mapping, and the mutants it now kills stay "survived" (seen in lock.py).
refresh_edge_tests() {
  [[ -f mutants/mutmut-stats.json ]] || return 0
  "$PY" - <<'EOF'
import json
from pathlib import Path
p = Path("mutants/mutmut-stats.json")
d = json.loads(p.read_text())
drop = [t for t in d["duration_by_test"] if "/test_edges_" in t]
for t in drop:
    del d["duration_by_test"][t]
p.write_text(json.dumps(d))
print(f"mutation: {len(drop)} test_edges_* test(s) will be mapped again")
EOF
}

# A run killed while mutmut was writing a mutated copy leaves that copy empty; mutmut then takes it as up to date and
# every test importing the module fails to collect (seen 2026-12-02: submission.py, "cannot import name"). Remove
# such copies with their verdicts, so this run generates them again.
if [[ -d mutants/bench_assets ]]; then
  while IFS= read -r copy; do
    src=${copy#mutants/}
    if [[ -s "$src" ]]; then
      echo "mutation: $copy is empty (an interrupted run); generating it again, its verdicts reset"
      rm -f "$copy" "$copy.meta" "$copy.spans"
    fi
  done < <(find mutants/bench_assets -name '*.py' -size 0)
fi

start=$SECONDS
if [[ $mode != report ]]; then
  [[ $mode != recheck ]] || refresh_edge_tests
  mapfile -t names < <(select_names "$mode")
  if [[ ${#names[@]} -eq 0 ]]; then
    echo "mutation: nothing to run for ${mods[*]} (every mutant has a verdict; --recheck reruns the survivors)"
  else
    echo "mutation: ${#names[@]} mutant name(s)/glob(s) for ${mods[*]}, $CHILDREN at a time"
    # No names at all (a full first run) would let mutmut pick every mutant; names make it rerun exactly these.
    nice -n 10 "$MUTMUT" run --max-children "$CHILDREN" "${names[@]}" || echo "mutation: mutmut exited $?"
  fi
  echo "mutation: ran for $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s"
fi

"$PY" - "$MIN" "${files[@]}" <<'EOF'
import json, sys
from pathlib import Path
from mutmut.stats import status_by_exit_code

minimum, files = float(sys.argv[1]), sys.argv[2:]
rows, tot = [], {"killed": 0, "survived": 0, "no tests": 0, "timeout": 0, "not checked": 0, "other": 0, "total": 0}
for f in files:
    meta = Path("mutants") / (f + ".meta")
    codes = json.loads(meta.read_text())["exit_code_by_key"].values() if meta.exists() else []
    c = dict.fromkeys(tot, 0)
    for code in codes:
        s = status_by_exit_code[code]
        s = s if s in c else ("killed" if s == "caught by type check" else "other")
        c[s] += 1
        c["total"] += 1
    rows.append((f, c))
    for k in tot:
        tot[k] += c[k]

def pct(c, with_timeouts=True):
    judged = c["total"] - c["not checked"]
    killed = c["killed"] + (c["timeout"] if with_timeouts else 0)
    return 100.0 * killed / judged if judged else 0.0

print(f"{'module':42} {'killed':>7} {'timeout':>7} {'survived':>8} {'no tests':>8} {'unchecked':>9} {'total':>6} "
      f"{'%':>6} {'% w/o t':>7}")
for f, c in rows + [("all selected", tot)]:
    print(f"{f:42} {c['killed']:7} {c['timeout']:7} {c['survived']:8} {c['no tests']:8} {c['not checked']:9} "
          f"{c['total']:6} {pct(c):6.1f} {pct(c, False):7.1f}")
print("(% = (killed + timeout) / checked, as mutmut counts; '% w/o t' = killed / checked, a timeout counted as a"
      " survivor: a hang is not a kill until its mutant is read. 'other' verdicts (suspicious, segfault) count as"
      f" not killed: {tot['other']})")
if tot["timeout"]:
    print("timeouts (read each with `mutmut show NAME`; list them in docs/testing.md):")
    for f in files:
        meta = Path("mutants") / (f + ".meta")
        if meta.exists():
            for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
                if status_by_exit_code[code] == "timeout":
                    print("   ", name)
bad = tot["not checked"] > 0 or tot["total"] == 0 or pct(tot) < minimum
if bad:
    why = (f"{tot['not checked']} mutant(s) not checked yet" if tot["not checked"] else
           f"kill rate {pct(tot):.1f}% < {minimum:g}%")
    print(f"mutation: FAIL ({why})")
sys.exit(1 if bad else 0)
EOF
