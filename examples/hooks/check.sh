#!/bin/sh
# A before-hook (docs/MIDDLEWARE.md): toolgate.yaml runs it before every shell
# call, with the call as JSON on stdin (Claude Code's PreToolUse fields and
# toolgate's own).  Exit 0 with no output: no opinion; exit 2: the call is
# denied, with stderr as the reason.  This one refuses force pushes.
call=$(cat)
case $call in
*'git push'*--force*|*'git push'*' -f'*)
	echo "force pushes are not for the agent; push without --force" >&2
	exit 2
	;;
esac
exit 0
