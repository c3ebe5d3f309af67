#!/bin/sh
# A stand-in deploy: reads the call JSON on stdin and appends one line per
# deploy to deploys.log.  It takes a moment, like a real deploy.
set -eu
call=$(cat)
field() { printf '%s' "$call" | sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
env=$(field env)
version=$(field version)
sleep 0.5
printf '%s deployed %s to %s (op %s)\n' "$(date -u +%FT%TZ)" "$version" "$env" "$TOOLGATE_OP_ID" >> deploys.log
printf '{"deployed":"%s","env":"%s"}\n' "$version" "$env"
