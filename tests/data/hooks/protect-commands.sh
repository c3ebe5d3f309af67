#!/bin/bash
# protect-files.sh from Claude Code's hooks guide with one change, so that it
# guards Bash commands as well as Edit and Write: the file path it checks is
# `.tool_input.file_path // .tool_input.command` instead of
# `.tool_input.file_path // empty`.

INPUT=$(cat)
FILE_PATH=$(echo "$INPUT" | jq -r '.tool_input.file_path // .tool_input.command')

PROTECTED_PATTERNS=(".env" "package-lock.json" ".git/")

for pattern in "${PROTECTED_PATTERNS[@]}"; do
  if [[ "$FILE_PATH" == *"$pattern"* ]]; then
    echo "Blocked: $FILE_PATH matches protected pattern '$pattern'" >&2
    exit 2
  fi
done

exit 0
