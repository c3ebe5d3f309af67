#!/bin/sh
# Appends the tool_use_id a hook is given, one per line, to tool_use_ids.txt.
jq -r '.tool_use_id' >> tool_use_ids.txt
