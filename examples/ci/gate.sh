#!/bin/sh
# Gate a training or serving config in CI: fail the job when its peak GPU
# memory crosses a limit, and write a Markdown summary for the pull request.
#
#   examples/ci/gate.sh PLAN.json [SUMMARY.md] [extra vramcalc flags...]
#
# PLAN.json is a vramcalc plan file ({"model": ..., "workload": {..., "gpu":
# ...}}). The gate fails (exit 1) when the plan does not fit its GPU or
# leaves less than $VRAMCALC_MIN_HEADROOM (default 10%) free. The summary
# (default vramcalc-summary.md) holds vramcalc's Markdown table and the
# verdict; on GitHub Actions it is also appended to $GITHUB_STEP_SUMMARY,
# and a step can post it as a pull-request comment (see github-workflow.yml).
#
# Exit codes: 0 within limits; 1 a limit is crossed; 2 bad input (vramcalc's
# error is in the summary); 3 internal error.
set -u
vramcalc=${VRAMCALC:-vramcalc}
plan=${1:?usage: gate.sh PLAN.json [SUMMARY.md] [vramcalc flags...]}
summary=${2:-vramcalc-summary.md}
[ $# -ge 2 ] && shift 2 || shift 1
headroom=${VRAMCALC_MIN_HEADROOM:-10%}

errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
"$vramcalc" plan "$plan" --check --min-headroom "$headroom" --format markdown "$@" >"$summary" 2>"$errors"
code=$?
{
  echo
  case $code in
    0) echo "**vramcalc gate: passed** (at least $headroom of the GPU stays free)" ;;
    1) echo "**vramcalc gate: FAILED**"; echo; sed 's/^vramcalc: /- /' "$errors" ;;
    *) echo "**vramcalc gate: error** (exit $code)"; echo; echo '```'; cat "$errors"; echo '```' ;;
  esac
} >>"$summary"
cat "$errors" >&2
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  cat "$summary" >>"$GITHUB_STEP_SUMMARY"
fi
exit $code
