# An `ask` at a terminal: stdin and stderr are a tty → the owner is asked
# there (y runs it once, anything else denies); without a tty → queued.
. "$(dirname "$0")/lib.sh"
cd "$WS"
command -v script > /dev/null || { fail "script(1) is needed to give the program a terminal"; finish; exit; }
ask() { # answer, file
	(sleep 0.5; printf '%s\r' "$1") |
		script -qec "'$TG' call --json write_file '{\"path\":\"$2\",\"content\":\"hi\"}'" /dev/null |
		tr -d '\r' > "$2.out"
}
ask y yes.txt
contains "$(cat yes.txt.out)" "allow once? [y/N]" "the prompt is shown"
contains "$(cat yes.txt.out)" "write_file" "the prompt names the tool"
contains "$(cat yes.txt.out)" '"status":"persisted"' "y: the call runs"
eq "$(cat yes.txt 2>/dev/null)" hi "y: the file is written"
contains "$(cat yes.txt.out)" '"approval":"tty"' "y: the trace says who approved"
ask n no.txt
contains "$(cat no.txt.out)" '"status":"denied"' "n: denied"
[ -e no.txt ] && fail "n: the file was written"
ask "" empty.txt
contains "$(cat empty.txt.out)" '"status":"denied"' "enter alone: denied (the default is no)"
tgcall notty write_file '{"path":"q.txt","content":"hi"}'
eq "$(jqv notty.json .status)" pending "no terminal: queued"
finish
