# Sourced by scripts/clients.sh and scripts/conformance.sh, which set $out (transcripts).

passed=0; failed=0
# check NAME CMD...: runs CMD with its output in $out/NAME.txt; one line either way.
check() {
  local name=$1; shift
  if "$@" >"$out/$name.txt" 2>&1; then
    passed=$((passed + 1)); echo "PASS $name"
  else
    failed=$((failed + 1)); echo "FAIL $name (transcript: $out/$name.txt)"
    # A fuzzer's report names the failing request first: show that section whole.
    if grep -q '= FAILURES =' "$out/$name.txt"; then
      sed -n '/= FAILURES =/,/= SUMMARY =/p' "$out/$name.txt" | head -n 200
    else
      tail -n 30 "$out/$name.txt"
    fi
  fi
}

# wait_for FILE PATTERN: until a started process wrote PATTERN to FILE (at most 30 s).
wait_for() {
  local _
  # -s: the started process may not have opened FILE yet.
  for _ in $(seq 1 300); do grep -qs "$2" "$1" && return 0; sleep 0.1; done
  return 1
}

# sandbox_ready ENV LOG: the sandbox writing ENV printed its key; else its log and status 1.
sandbox_ready() {
  wait_for "$1" '^SVC_API_KEY=' && return 0
  echo "sandbox did not start"; cat "$2"; return 1
}
