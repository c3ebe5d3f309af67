#!/usr/bin/env python3
# A Claude Code PreToolUse hook that rewrites instead of denying: a Write of
# a *.log file goes to logs/ under the project (hookSpecificOutput.updatedInput,
# the whole tool_input with file_path changed).
import json
import os
import sys

call = json.load(sys.stdin)
tool_input = call.get("tool_input", {})
path = tool_input.get("file_path", "")
if call.get("tool_name") == "Write" and path.endswith(".log") and "/logs/" not in path:
    new_input = dict(tool_input)
    new_input["file_path"] = os.path.join(call["cwd"], "logs", os.path.basename(path))
    print(json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "logs go to logs/",
            "updatedInput": new_input,
        }
    }))
sys.exit(0)
