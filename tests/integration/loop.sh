# Loop detection (issue 7): every `toolgate call` is a fresh process, so a
# session's streak is carried from one to the next by the ledger.  The
# same read in one session: the 3rd and 4th get the hint, the 5th and 6th
# are denied loop_detected.  Other sessions, changing results, dry runs,
# calls without a session (not tracked), observe mode and a bad section
# are checked too.
. "$(dirname "$0")/lib.sh"
cd "$WS"
printf 'one\ntwo\n' > hello.txt
mkdir bin
cat > bin/progress.sh <<'SH'
#!/bin/sh
n=$(cat progress.count 2>/dev/null || echo 0)
n=$((n + 10)); echo $n > progress.count
printf '{"status":"progress %s%%","checked_at":"2026-01-01T00:00:0%sZ"}\n' "$n" "$((n / 10))"
SH
chmod +x bin/progress.sh
cat > toolgate.yaml <<'YAML'
tools:
  progress:
    description: How far the build is.
    input_schema: {type: object}
    command: [./bin/progress.sh]
    read_only: true
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml
READ='{"path":"hello.txt"}'
HINT3="you have called read_file with these arguments 3 times with the same result; try something else"
HINT4="you have called read_file with these arguments 4 times with the same result; try something else"

# the defaults (no loop_detection section): warn 3, block 5
for i in 1 2; do
	tgcall "r$i" --session S read_file "$READ"
	eq "$(cat "$WS/r$i.exit")" 0 "read $i exits 0"
	eq "$(jqv "$WS/r$i.json" .hint)" null "read $i has no hint"
done
tgcall r3 --session S read_file "$READ"
eq "$(cat "$WS/r3.exit")" 0 "read 3 still runs"
eq "$(jqv "$WS/r3.json" .status)" persisted "read 3 is persisted"
eq "$(jqv "$WS/r3.json" .hint)" "$HINT3" "read 3 carries the hint, from the ledger's window"
eq "$(jqv "$WS/r3.json" .output.total_lines)" 2 "with its result"
tgcall r4 --session S read_file "$READ"
eq "$(jqv "$WS/r4.json" .hint)" "$HINT4" "read 4 counts 4"
for i in 5 6; do
	tgcall "r$i" --session S read_file "$READ"
	eq "$(cat "$WS/r$i.exit")" 3 "read $i exits 3 (denied)"
	eq "$(jqv "$WS/r$i.json" .status)" denied "read $i is denied"
	eq "$(jqv "$WS/r$i.json" .error.kind)" loop_detected "read $i: loop_detected"
	eq "$(jqv "$WS/r$i.json" .error.rule)" "loop_detection: block 5" "read $i: the rule"
	contains "$(jqv "$WS/r$i.json" .error.message)" \
		"you have called read_file with these arguments $i times with the same result" \
		"read $i: a sentence the model can act on"
	eq "$(jqv "$WS/r$i.json" .output)" null "read $i did not run"
done

# the ledger keeps each call's window entry; the blocks are marked and count
eq "$(sql "SELECT count(*) FROM ops WHERE session = 'S' AND loop LIKE 'v1 %'")" 6 \
	"six window entries for session S"
eq "$(sql "SELECT count(*) FROM ops WHERE session = 'S' AND loop LIKE '% rb read_file'")" 2 \
	"the two blocks are in the window"
eq "$(sql "SELECT count(DISTINCT substr(loop, 4, 64)) FROM ops WHERE session = 'S'")" 1 \
	"one signature"
eq "$(sql "SELECT count(*) FROM events WHERE type = 'tool.loop.warning'")" 2 "two warning events"
eq "$(sql "SELECT count(*) FROM events WHERE type = 'tool.loop.blocked'")" 2 "two blocked events"

# another session is not held to S's loop; other arguments are another call
tgcall t1 --session T read_file "$READ"
eq "$(jqv "$WS/t1.json" .status)" persisted "session T reads"
eq "$(jqv "$WS/t1.json" .hint)" null "session T has no hint"
tgcall s7 --session S read_file '{"path":"hello.txt","limit":1}'
eq "$(jqv "$WS/s7.json" .status)" persisted "S reads with other arguments"

# a status that moves on is polled as often as needed
for i in 1 2 3 4 5 6; do
	tgcall "p$i" --session P progress
	eq "$(jqv "$WS/p$i.json" .status)" persisted "poll $i runs"
	eq "$(jqv "$WS/p$i.json" .hint)" null "poll $i has no hint"
done

# dry runs are not counted
for i in 1 2 3 4 5 6; do
	tgcall "d$i" --session D --dry-run read_file "$READ"
	eq "$(jqv "$WS/d$i.json" .status)" dry_run "dry run $i"
done
tgcall d7 --session D read_file "$READ"
eq "$(jqv "$WS/d7.json" .hint)" null "after six dry runs the first real read has no hint"

# calls without a session (people, scripts, CI jobs) are not tracked: never
# warned or blocked, no window entry, no loop event
for i in 1 2 3 4 5 6 7 8; do
	tgcall "n$i" list_dir '{"path":"bin"}'   # not the root: the envelopes land there
	eq "$(cat "$WS/n$i.exit")" 0 "no session: list $i exits 0"
	eq "$(jqv "$WS/n$i.json" .status)" persisted "no session: list $i is persisted"
	eq "$(jqv "$WS/n$i.json" .hint)" null "no session: list $i has no hint"
done
eq "$(sql "SELECT count(*) FROM ops WHERE session IS NULL AND tool = 'list_dir'")" 8 \
	"no session: eight calls in the ledger"
eq "$(sql "SELECT count(*) FROM ops WHERE session IS NULL AND loop IS NOT NULL")" 0 \
	"no session: no window entries"
eq "$(sql "SELECT count(*) FROM events e JOIN ops o ON o.op_id = e.op_id
	WHERE o.session IS NULL AND e.type LIKE 'tool.loop.%'")" 0 "no session: no loop events"

# observe mode: the events only
cat >> toolgate.yaml <<'YAML'
loop_detection: {mode: observe}
YAML
for i in 1 2 3 4 5 6; do
	tgcall "o$i" --session O read_file "$READ"
	eq "$(cat "$WS/o$i.exit")" 0 "observe: read $i runs"
	eq "$(jqv "$WS/o$i.json" .hint)" null "observe: read $i has no hint"
done
eq "$(sql "SELECT count(*) FROM events e JOIN ops o ON o.op_id = e.op_id
	WHERE o.session = 'O' AND e.type = 'tool.loop.blocked'
	AND json_extract(e.data, '$.enforced') = 0")" 2 "observe: would-be blocks are events"

# a bad section stops the gate with file:line
cat > bad.yaml <<'YAML'
profile: coding
loop_detection:
  warn: 4
  block: 3
YAML
(cd "$WS" && "$TG" call --config bad.yaml list_dir > bad.out 2> bad.err)
eq "$?" 1 "a bad loop_detection section exits 1"
contains "$(cat bad.err)" "bad.yaml:4:" "the error names the file and line"
contains "$(cat bad.err)" "loop_detection.block: must be at least warn (4), got 3" \
	"and what is wrong"
sanitizers bad.err "bad config"

finish
