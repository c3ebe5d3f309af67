#!/bin/sh
# The operator of the client tests: approves what the model was just told is
# queued.  Run by the scripted model (model.mjs --approve) while the model
# waits, before it retries the call.  Reads the tool results the model got
# on stdin; approves each approval id found there ("queued as ID",
# "approval_id"), and when none is there, each open approval of the
# workspace (what `toolgate approvals list` shows).  Prints one line per
# approval: "approved ID (from the result|from the list)".
#
#   approve.sh WORKSPACE      with $TOOLGATE the program
set -u
ws=$1
tg=${TOOLGATE:?}
ids=$(grep -oE '(queued as |approval_id[^0-9a-f]*)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}' |
	grep -oE '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}' | sort -u)
from="from the result"
if [ -z "$ids" ]; then
	ids=$(cd "$ws" && "$tg" approvals list --json --workspace "$ws" < /dev/null | jq -r '.[] | select(.state == "pending") | .id')
	from="from the list"
fi
rc=0
for id in $ids; do
	if (cd "$ws" && "$tg" approvals approve "$id" --workspace "$ws" --reason "client test" < /dev/null > /dev/null); then
		echo "approved $id ($from)"
	else
		echo "could not approve $id ($from)"
		rc=1
	fi
done
[ -n "$ids" ] || { echo "nothing to approve"; rc=1; }
exit $rc
