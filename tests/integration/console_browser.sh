# The console in a real browser: headless Chromium (Debian's `chromium`)
# driven by playwright-core (tests/console/browser.mjs says what it checks).
# Chromium is installed here when it is missing; a machine where it cannot
# be, or that has no Node.js, fails this test with a sentence: it never
# skips.  Screenshots go to the workspace and, with CONSOLE_SCREENSHOTS=DIR,
# to DIR too.
. "$(dirname "$0")/lib.sh"

chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
	if [ "$(id -u)" != 0 ]; then
		fail "Chromium ($chromium) is missing and only root can install it: apt-get install chromium"
		finish; exit
	fi
	echo "console_browser: installing Debian's chromium" >&2
	export DEBIAN_FRONTEND=noninteractive
	if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } \
		> "$WS/apt.log" 2>&1; then
		tail -n 20 "$WS/apt.log" >&2
		fail "Chromium is missing and apt-get could not install Debian's chromium package"
		finish; exit
	fi
	[ -x "$chromium" ] || { fail "apt-get installed chromium, but $chromium is not there"; finish; exit; }
fi
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
	fail "the browser tests need Node.js and npm (to run playwright-core), and this machine has none"
	finish; exit
fi
"$ROOT/scripts/install-node-deps" || { fail "scripts/install-node-deps could not install playwright-core"; finish; exit; }
[ -f "$ROOT/tests/console/node_modules/playwright-core/package.json" ] ||
	{ fail "playwright-core is not in tests/console/node_modules after scripts/install-node-deps"; finish; exit; }

cd "$ROOT/tests/console" || exit 1
TMPDIR=$WS CHROMIUM=$chromium node browser.mjs
