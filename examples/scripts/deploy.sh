#!/bin/sh
# A stand-in for the example's deploy_service tool (toolgate.yaml): the gate
# gives the call as JSON on stdin ({"op_id", "tool", "args", "principal",
# "idempotency_key"}) and reads a JSON result from stdout; exit 0 is success,
# 75 a transient failure, anything else a tool error.  It deploys nothing:
# it appends what it was asked to deploys.log.  Put your deploy here.
set -eu
call=$(cat)
field() { printf '%s' "$call" | sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
env=$(field env)
version=$(field version)
printf '%s deployed %s to %s (op %s)\n' "$(date -u +%FT%TZ)" "$version" "$env" "$TOOLGATE_OP_ID" >> deploys.log
printf '{"deployed":"%s","env":"%s"}\n' "$version" "$env"
