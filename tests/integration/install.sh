# make install PREFIX=...: the program, the library, the headers (toolgate.h
# and the two it includes, toolgate/admin.h and toolgate/apps.h) and a
# pkg-config file that a program can build against.
. "$(dirname "$0")/lib.sh"
make -s -C "$ROOT" install PREFIX="$WS/prefix" > "$WS/install.log" 2>&1 || { cat "$WS/install.log"; fail "make install"; }
for f in bin/toolgate lib/libtoolgate.a include/toolgate.h include/toolgate/admin.h \
	include/toolgate/apps.h lib/pkgconfig/toolgate.pc; do
	[ -f "$WS/prefix/$f" ] || fail "installed $f"
done
cat > "$WS/use.c" <<'C'
#include <toolgate.h>
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
	tg_gate *g = NULL;
	char *err = NULL;
	tg_options o = {.sync_full = -1};
	if (tg_gate_open(&o, &g, &err) != 0)
		return 1;
	tg_request req = {.tool = "list_dir", .args = "{}"};
	tg_result *r;
	tg_status st = tg_call(g, &req, &r);
	printf("%s %d\n", tg_status_name(st), tg_status_exit_code(TG_COMMITTED));
	tg_result_free(r);
	char *stats = tg_stats(g, 0, &err);   /* toolgate/admin.h, through toolgate.h */
	if (!stats)
		return 1;
	free(stats);
	tg_gate_close(g);
	return 0;
}
C
# either of the two included headers on its own brings the core with it
cat > "$WS/apps.c" <<'C'
#include <toolgate/apps.h>
const char *sgr(void) { return tg_status_sgr(tg_status_name(TG_PERSISTED)); }
C
export PKG_CONFIG_PATH=$WS/prefix/lib/pkgconfig
cc -std=c11 "$WS/use.c" $(pkg-config --cflags --libs toolgate) -o "$WS/use" || fail "build against the installed library"
cc -std=c11 -Wall -Werror -c "$WS/apps.c" $(pkg-config --cflags toolgate) -o "$WS/apps.o" ||
	fail "toolgate/apps.h alone"
mkdir -p "$WS/run" && eq "$(cd "$WS/run" && "$WS/use")" "persisted 6" "a program using the installed library"
eq "$("$WS/prefix/bin/toolgate" --version | cut -d' ' -f1)" toolgate "the installed program runs"
finish
