# A disk that fills up: the ledger cannot record a call whose tool already
# took effect → `committed` (exit 6), never a lost or half row, and the
# claim left behind makes a repeat an unknown outcome instead of a re-run.
# Runs in a private mount namespace on a 2 MiB tmpfs.
. "$(dirname "$0")/lib.sh"
mnt=$WS/small
mkdir -p "$mnt"
cat > "$WS/inner.sh" <<'SH'
set -u
mnt=$1 tg=$2
mount -t tmpfs -o size=2m tmpfs "$mnt" || { echo "cannot mount a tmpfs" >&2; exit 99; }
cd "$mnt"
cat > fill.sh <<'FILL'
#!/bin/sh
cat > /dev/null
dd if=/dev/zero of=filler bs=64k 2>/dev/null   # until the disk is full
echo '{"filled":true}'
FILL
chmod +x fill.sh
cat > toolgate.yaml <<'YAML'
mode: bypassPermissions
tools:
  fill:
    description: Fill the disk.
    input_schema: {type: object}
    command: [./fill.sh]
    requires_idempotency_key: true
YAML
export TOOLGATE_CONFIG=$mnt/toolgate.yaml
"$tg" call --json list_dir '{}' > "$mnt/../before.json" 2>&1
"$tg" call --json fill '{}' --key f1 > "$mnt/../full.json" 2> "$mnt/../full.err"
echo $? > "$mnt/../full.exit"
rm -f filler
"$tg" call --json fill '{}' --key f1 > "$mnt/../again.json" 2>&1
sqlite3 "$mnt/.toolgate/ledger.db" 'pragma quick_check; select count(*) from ops;' > "$mnt/../ledger.txt"
"$tg" log --json > "$mnt/../log.jsonl" 2>&1
SH
unshare -m bash "$WS/inner.sh" "$mnt" "$TG"
rc=$?
[ $rc -ne 99 ] || fail "this test needs a private tmpfs mount (unshare -m, root)"
eq "$(jqv "$WS/before.json" .status)" persisted "a call before the disk fills"
eq "$(jqv "$WS/full.json" .status)" committed "the tool ran, the ledger could not record it"
eq "$(cat "$WS/full.exit")" 6 "committed exits 6"
eq "$(jqv "$WS/full.json" .output.filled)" true "the tool's result is still returned"
contains "$(jqv "$WS/full.json" '.stages[-1].error')" "full" "the persist stage says why"
sanitizers "$WS/full.err" "full disk"
eq "$(jqv "$WS/again.json" .status)" pending "the repeat is not re-run"
eq "$(jqv "$WS/again.json" .error.kind)" unknown_outcome "the repeat is an unknown outcome"
eq "$(sed -n 1p "$WS/ledger.txt")" ok "the ledger is consistent"
eq "$(sed -n 2p "$WS/ledger.txt")" 2 "two rows: the first call and the repeat; no half row"
finish
