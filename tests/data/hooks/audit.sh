#!/bin/sh
# An after-hook: appends the call it is given (one JSON line) to audit.jsonl.
cat >> audit.jsonl
printf '\n' >> audit.jsonl
