# The console in a real browser: headless Chromium (Debian's `chromium`)
# driven by playwright-core (tests/console/browser.mjs says what it checks).
# Chromium comes from scripts/install-deps test; missing, it fails this
# test with a sentence.  A machine without Node.js and npm cannot run
# playwright-core: there the test says SKIPPED, loudly, as every test of an
# npm package does.  Screenshots go to the workspace and, with CONSOLE_SCREENSHOTS=DIR,
# to DIR too.
. "$(dirname "$0")/lib.sh"

chromium=${CHROMIUM:-/usr/bin/chromium}
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
	echo "SKIPPED: no Node.js and npm to run playwright-core: the console's browser tests did" \
		"not run" >&2
	exit 0
fi
if [ ! -x "$chromium" ]; then
	fail "Chromium ($chromium) is missing: scripts/install-deps test installs Debian's chromium (make check runs it)"
	finish; exit
fi
"$ROOT/scripts/install-node-deps" || { fail "scripts/install-node-deps could not install playwright-core"; finish; exit; }
[ -f "$ROOT/tests/console/node_modules/playwright-core/package.json" ] ||
	{ fail "playwright-core is not in tests/console/node_modules after scripts/install-node-deps"; finish; exit; }

cd "$ROOT/tests/console" || exit 1
TMPDIR=$WS CHROMIUM=$chromium node browser.mjs
