# Sourced by the pg_*.sh cases after lib.sh.  Gives: $PG_BIN (the server's
# programs), $PG_URL (the run's server: $TOOLGATE_TEST_PG from tests/run, or
# a cluster of this case's own when it is run alone), and
#   pg_newdb VAR NAME      a fresh database; its URL in $VAR (dropped at exit)
#   pgq URL SQL            one query, unaligned rows, '|' between columns
#                          (the URL's password goes to psql in its
#                          environment, not on its command line)
#   pg_password URL        the URL's password ("" if none)
#   pg_userinfo URL        what comes before its @ ("toolgate:PASSWORD")
#   pg_own_cluster VAR DIR a cluster of this case's own in DIR (a new directory
#                          made by mktemp, stopped and removed at exit); its
#                          URL in $VAR
#   pg_atexit CMD          run CMD at exit, before the workspace goes
# (not in $(...): what they register for the exit would be lost)
# A missing PostgreSQL is a failure with a sentence, never a skip.
PG_CLUSTER=$ROOT/scripts/pg-cluster
if ! PG_BIN=$("$PG_CLUSTER" bindir 2>&1); then
	echo "FAIL: PostgreSQL is missing, so this case cannot run: $PG_BIN" >&2
	echo "      (make check installs it through scripts/install-deps)" >&2
	exit 1
fi

# at exit: our commands (newest first), then lib.sh's own trap
PG_ATEXIT=()
PG_PREV_TRAP=$(trap -p EXIT)
pg_atexit() { PG_ATEXIT=("$1" "${PG_ATEXIT[@]}"); }
pg_exit() {
	local c
	for c in "${PG_ATEXIT[@]}"; do eval "$c" || true; done
	if [ -n "$PG_PREV_TRAP" ]; then
		eval "set -- ${PG_PREV_TRAP#trap }"
		eval "$2"
	fi
}
trap pg_exit EXIT
trap 'exit 130' INT TERM HUP

# The cluster's URLs carry a password (scripts/pg-cluster): a command line is
# readable by every local user, a process's environment only by its owner.
# (A password with %-escapes is not decoded: pg-cluster's are hex.)
PG_URL_RE='^(postgres(ql)?://)([^:@/]*)(:([^@/]*))?@(.*)$'
pg_password() { [[ $1 =~ $PG_URL_RE ]] && printf '%s' "${BASH_REMATCH[5]}"; return 0; }
pg_userinfo() { [[ $1 =~ $PG_URL_RE ]] && printf '%s%s' "${BASH_REMATCH[3]}" "${BASH_REMATCH[4]}"; return 0; }

pgq() {
	local _pg_u=$1 _pg_pw=
	if [[ $_pg_u =~ $PG_URL_RE ]]; then
		_pg_pw=${BASH_REMATCH[5]}
		_pg_u=${BASH_REMATCH[1]}${BASH_REMATCH[3]}@${BASH_REMATCH[6]}
	fi
	if [ -n "$_pg_pw" ]; then
		PGPASSWORD=$_pg_pw "$PG_BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 -d "$_pg_u" -c "$2"
	else
		"$PG_BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 -d "$_pg_u" -c "$2"
	fi
}

# (their locals are prefixed: VAR may be any name of the caller's)
pg_own_cluster() {
	local _pg_dir=$2 _pg_url
	pg_atexit "\"\$PG_CLUSTER\" stop '$_pg_dir' immediate > /dev/null 2>&1; rm -rf '$_pg_dir'"
	_pg_url=$("$PG_CLUSTER" start "$_pg_dir") || return 1
	printf -v "$1" '%s' "$_pg_url"
}

if [ -n "${TOOLGATE_TEST_PG:-}" ]; then
	PG_URL=$TOOLGATE_TEST_PG
else
	pg_own_cluster PG_URL "$(mktemp -d "${TMPDIR:-/tmp}/tg-pg.XXXXXX")" || {
		echo "FAIL: could not start a PostgreSQL server for this case" >&2
		exit 1
	}
fi

# pg_newdb VAR NAME: a database of this case's own, so no case sees another's rows
pg_newdb() {
	local _pg_db
	_pg_db="tg_$(echo "$2" | tr -c 'a-z0-9_\n' _)_$$_$RANDOM"
	pgq "$PG_URL" "CREATE DATABASE $_pg_db" || { echo "FAIL: CREATE DATABASE $_pg_db" >&2; return 1; }
	pg_atexit "pgq '$PG_URL' 'DROP DATABASE IF EXISTS $_pg_db WITH (FORCE)' > /dev/null 2>&1"
	printf -v "$1" '%s' "${PG_URL%/*}/$_pg_db"
}
