/*
 * test_bridge.c — when bridged MCP servers start (src/mcp/bridge.c): not
 * with the gate, not for a built-in call, but when one of their tools is
 * first needed (a call naming one, a listing); once, however many threads
 * need it at once; the server's stderr in its log under .toolgate/logs,
 * never on ours; a server that cannot start leaves its tools unavailable
 * with its last words in the reason.
 *
 * The server is a shell script speaking just enough MCP, run in its
 * sandbox (workspace-write, so that it can leave a line in `started` each
 * time it starts).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "gate/gate.h"
#include "mcp/bridge.h"
#include "mw/part.h"
#include "registry.h"
#include "toolgate.h"
#include "util/util.h"

#define THREADS 8

static char ws[64];

/* A server that says it started (a line in ./started, one on stderr),
 * then answers initialize, tools/list (one tool, "echo") and tools/call. */
static const char server_sh[] =
	"echo started >> started\n"
	"echo 'the fake server says hello on stderr' >&2\n"
	"while IFS= read -r l; do\n"
	"  id=$(printf '%s' \"$l\" | sed -n 's/.*\"id\":\\([0-9]*\\).*/\\1/p')\n"
	"  [ -n \"$id\" ] || continue\n"
	"  case \"$l\" in\n"
	"  *'\"initialize\"'*) r='{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}},"
	"\"serverInfo\":{\"name\":\"f\",\"version\":\"1\"}}' ;;\n"
	"  *'\"tools/list\"'*) r='{\"tools\":[{\"name\":\"echo\",\"inputSchema\":{\"type\":\"object\"}}]}' ;;\n"
	"  *'\"tools/call\"'*) echo 'called' >&2; r='{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}' ;;\n"
	"  *) r='{}' ;;\n"
	"  esac\n"
	"  printf '{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\\n' \"$id\" \"$r\"\n"
	"done\n";

static void write_file(const char *rel, const char *text)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", ws, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The whole of a workspace file ("" when there is none); caller frees. */
static char *read_ws(const char *rel)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", ws, rel);
	FILE *f = fopen(p, "r");
	if (!f)
		return tgi_strdup("");
	tgi_buf b;
	tgi_buf_init(&b, 1 << 22);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		tgi_buf_append(&b, chunk, n);
	fclose(f);
	char *s = tgi_buf_steal(&b);
	return s ? s : tgi_strdup("");
}

/* Lines in ./started: how often the server started. */
static int starts(void)
{
	char *s = read_ws("started");
	int n = 0;
	for (char *p = s; (p = strstr(p, "started\n")); p++)
		n++;
	free(s);
	return n;
}

static int setup(void **state)
{
	strcpy(ws, "/tmp/tg-bridge.XXXXXX");
	assert_non_null(mkdtemp(ws));
	write_file("hello.txt", "one\n");
	write_file("srv.sh", server_sh);
	write_file("toolgate.yaml",
	           "profile: full\n"
	           "mode: bypassPermissions\n"
	           "mcp_servers:\n"
	           "  f:\n"
	           "    command: [sh, srv.sh]\n"
	           "    sandbox: workspace-write\n"
	           "  bad:\n"
	           "    command: [sh, -c, \"echo 'ModuleNotFoundError: no module named mcp' >&2; exit 3\"]\n");
	unsetenv("TOOLGATE_CONFIG");
	unsetenv("TOOLGATE_PRINCIPAL");
	unsetenv("TOOLGATE_TOKEN");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
	return system(cmd);
}

static tg_gate *open_gate(void)
{
	char cfg[128];
	snprintf(cfg, sizeof cfg, "%s/toolgate.yaml", ws);
	tg_options o = {.config_path = cfg, .workspace = ws, .sync_full = 0, .bridge = 1};
	tg_gate *g = NULL;
	char *err = NULL;
	int rc = tg_gate_open(&o, &g, &err);
	if (rc)
		fail_msg("open: %s", err);
	return g;
}

static json_t *call(tg_gate *g, const char *tool, const char *args)
{
	tg_request rq = {.tool = tool, .args = args};
	tg_result *r = NULL;
	tg_call(g, &rq, &r);
	json_t *env = json_loads(tg_result_json(r, 0), 0, NULL);
	tg_result_free(r);
	assert_non_null(env);
	return env;
}

/* Opening the gate and a built-in call start no server. */
static void test_builtin_starts_nothing(void **state)
{
	tg_gate *g = open_gate();
	json_t *env = call(g, "read_file", "{\"path\":\"hello.txt\"}");
	assert_string_equal(json_string_value(json_object_get(env, "status")), "persisted");
	json_decref(env);
	assert_null(tgi_registry_find(g->reg, "f__echo"));
	assert_false(tgi_registry_all_listed(g->reg));
	char manifest[65] = "x";
	tgi_registry_manifest(g->reg, g->cfg, g->profile, manifest);
	assert_string_equal(manifest, "");     /* the tools are not known: nothing is started */
	tg_gate_close(g);
	assert_int_equal(starts(), 0);
	char *log = read_ws(".toolgate/logs/f.log");
	assert_string_equal(log, "");
	free(log);
}

/* A call naming a server's tool starts that server (and no other), and
 * its stderr is in its log. */
static void test_call_starts_its_server(void **state)
{
	tg_gate *g = open_gate();
	json_t *env = call(g, "f__echo", "{}");
	assert_string_equal(json_string_value(json_object_get(env, "status")), "persisted");
	json_decref(env);
	assert_int_equal(starts(), 1);
	assert_false(tgi_registry_all_listed(g->reg)); /* "bad" was not needed */
	tg_gate_close(g);
	char *log = read_ws(".toolgate/logs/f.log");
	assert_non_null(strstr(log, "toolgate: starting the MCP server \"f\""));
	assert_non_null(strstr(log, "\nthe fake server says hello on stderr\n"));
	assert_non_null(strstr(log, "toolgate: it offers 1 tool: f__echo\n"));
	assert_non_null(strstr(log, "\ncalled\n"));
	free(log);
	char *bad = read_ws(".toolgate/logs/bad.log");
	assert_string_equal(bad, "");
	free(bad);
}

/* A server that cannot start: its tools are unknown, and why says its
 * last line on stderr and where the rest is. */
static void test_failed_start_says_why(void **state)
{
	tg_gate *g = open_gate();
	json_t *env = call(g, "bad__x", "{}");
	assert_string_equal(json_string_value(json_object_get(env, "status")), "invalid");
	const char *msg = json_string_value(json_object_get(json_object_get(env, "error"), "message"));
	assert_non_null(strstr(msg, "the MCP server \"bad\" could not be started"));
	assert_non_null(strstr(msg, "its last line on stderr: \"ModuleNotFoundError: no module "
	                            "named mcp\" (all of it is in .toolgate/logs/bad.log)"));
	json_decref(env);
	tg_gate_close(g);
}

/* ---- several threads need the servers at once ---- */

typedef struct need {
	tg_gate *g;
	int      listing;        /* a listing, else a look-up */
	int      found;
} need;

static void *need_main(void *arg)
{
	need *n = arg;
	if (n->listing) {
		json_t *defs = tgi_tool_defs(n->g, NULL, NULL);
		size_t i;
		json_t *d;
		json_array_foreach(defs, i, d)
			n->found |= !strcmp(json_string_value(json_object_get(d, "name")), "f__echo");
		json_decref(defs);
	} else {
		n->found = tgi_registry_need(n->g->reg, "f__echo") != NULL;
	}
	return NULL;
}

static void test_concurrent_needs_start_once(void **state)
{
	tg_gate *g = open_gate();
	pthread_t t[THREADS];
	need n[THREADS];
	for (int i = 0; i < THREADS; i++) {
		n[i] = (need){.g = g, .listing = i % 2};
		assert_int_equal(pthread_create(&t[i], NULL, need_main, &n[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_true(n[i].found);
	}
	assert_int_equal(starts(), 1);
	assert_true(tgi_registry_all_listed(g->reg)); /* a listing waited for both */
	char manifest[65] = "";
	tgi_registry_manifest(g->reg, g->cfg, g->profile, manifest);
	assert_int_equal(strlen(manifest), 64);
	tg_gate_close(g);
}

/* The bridge part's state (gate/parts.c lists it; the gate names it nowhere). */
static tgi_bridge *bridge_of(tg_gate *g)
{
	for (size_t i = 0; tgi_parts[i]; i++)
		if (!strcmp(tgi_parts[i]->name, "bridge"))
			return g->part[i];
	return NULL;
}

/* The bridge stopped while a thread is starting a server and waiting for
 * it: the wait ends, the server's thread is joined, and nothing starts
 * after the stop. */
static void *need_soon(void *arg)
{
	tgi_bridge_need_tool(arg, "f__echo");
	return NULL;
}

static void test_stop_while_starting(void **state)
{
	tg_gate *g = open_gate();
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, need_soon, bridge_of(g)), 0);
	tgi_bridge_stop(bridge_of(g));
	pthread_join(t, NULL);
	assert_int_equal(tgi_bridge_need_tool(bridge_of(g), "f__echo"), 1);
	tg_gate_close(g);
	assert_true(starts() <= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_builtin_starts_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_starts_its_server, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_start_says_why, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_needs_start_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_while_starting, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
