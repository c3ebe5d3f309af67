#!/usr/bin/env python3
# A Claude Code PreToolUse hook, as written for Claude Code: it reads
# tool_name and tool_input from stdin and denies destructive shell commands
# with hookSpecificOutput.permissionDecision; anything else gets no opinion.
import json
import sys

call = json.load(sys.stdin)
command = call.get("tool_input", {}).get("command", "")
if isinstance(command, list):
    command = " ".join(command)
if call.get("tool_name") in ("Bash", "shell") and "rm -rf" in command:
    print(json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "rm -rf is blocked by the project's hook",
        }
    }))
sys.exit(0)
