#!/bin/bash
# Guards the config contract: bad files fail with exit status 2 and one "file:line:column: key.path: message" line per error (unknown key, wrong type, bad size unit, bad duration, JSON syntax), and good files pass --check-config.
. "$(dirname "$0")/lib.sh"
it_init "$@"
d=$IT_DIR
errors=0

# expect_error NAME LINE:COLUMN KEYPATH(regex, "" = any) CONTENT
# The column is where the offending key (unknown key) or value (everything
# else) starts, 1-based; for JSON syntax errors, where the parser stopped.
expect_error() {
	local name=$1 pos=$2 key=$3 f=$d/$1.json out rc re
	printf '%s' "$4" >"$f"
	out=$("$SMCPROXYD" --check-config -c "$f" 2>&1 >/dev/null)
	rc=$?
	if [ -n "$key" ]; then
		re="^$f:$pos: $key: .+"
	else
		re="^$f:$pos: .+"
	fi
	if [ $rc -ne 2 ]; then
		echo "  $name: exit status $rc, expected 2; stderr: $out"
		errors=$((errors + 1))
	elif ! printf '%s\n' "$out" | grep -qE "$re"; then
		echo "  $name: no line matching '$re' in:"
		printf '%s\n' "$out" | sed 's/^/      /'
		errors=$((errors + 1))
	else
		echo "  ok $name: $(printf '%s\n' "$out" | grep -E "$re" | head -1 | sed "s|^$d/||")"
	fi
	local bad
	bad=$(printf '%s\n' "$out" | grep -vE "^$f:[0-9]+:[0-9]+: " | grep -v '^$')
	if [ -n "$bad" ]; then
		echo "  $name: stderr lines not in file:line:column: form: $bad"
		errors=$((errors + 1))
	fi
}

expect_error unknown_key 3:3 'bogus' '{
  "listen": ["127.0.0.1:7001"],
  "bogus": 1
}
'
expect_error unknown_nested_key 4:5 'relay\.buffr' '{
  "mark": 7,
  "relay": {
    "buffr": "64KiB"
  }
}
'
expect_error wrong_type 2:11 'mark' '{
  "mark": "abc"
}
'
expect_error wrong_type_object 3:12 'stats' '{
  "log": {"level": "info"},
  "stats": 5
}
'
expect_error bad_size_unit 3:13 'buffers\.ring' '{
  "buffers": {
    "ring": "64XiB"
  }
}
'
expect_error bad_duration 2:35 'fallback\.connect_timeout' '{
  "fallback": {"connect_timeout": "2 fortnights"}
}
'
expect_error bad_listen 2:14 'listen(\[0\]|\.0)' '{
  "listen": ["127.0.0.1:99999"]
}
'
expect_error syntax_missing_comma 3:[0-9]+ '' '{
  "mark": 7
  "workers": 1
}
'
expect_error syntax_truncated 2:[0-9]+ '' '{
  "mark": 7,'

# Two errors, two lines.
f=$d/two_errors.json
printf '{\n  "bogus": 1,\n  "mark": "x"\n}\n' >"$f"
out=$("$SMCPROXYD" --check-config -c "$f" 2>&1 >/dev/null)
n=$(printf '%s\n' "$out" | grep -cE "^$f:[0-9]+:[0-9]+: ")
if [ "$n" -lt 2 ]; then
	echo "  two_errors: $n error line(s), expected one per error: $out"
	errors=$((errors + 1))
else
	echo "  ok two_errors: $n lines"
fi

# The daemon itself refuses to start on a bad file, with status 2.
timeout 5 "$SMCPROXYD" -c "$d/wrong_type.json" --foreground >/dev/null 2>&1
rc=$?
if [ $rc -ne 2 ]; then
	echo "  start with a bad file: exit status $rc, expected 2"
	errors=$((errors + 1))
fi

# Good files pass.
it_config
"$SMCPROXYD" --check-config -c "$IT_CFG" >/dev/null 2>"$d/good.err" || {
	echo "  good config rejected: $(cat "$d/good.err")"
	errors=$((errors + 1))
}
if ! "$SMCPROXYD" --print-default-config >"$d/default.json" 2>"$d/default.err" ||
   ! "$SMCPROXYD" --check-config -c "$d/default.json" >/dev/null 2>"$d/default.err"; then
	echo "  --print-default-config does not pass --check-config: $(cat "$d/default.err")"
	errors=$((errors + 1))
fi
printf '{}\n' >"$d/empty.json"
"$SMCPROXYD" --check-config -c "$d/empty.json" >/dev/null 2>&1 || {
	echo "  {} (every key optional) rejected"
	errors=$((errors + 1))
}

[ $errors -eq 0 ] || it_fail "$errors config check(s) failed"
it_pass "every error class reported as file:line:column: key: message, exit 2"
