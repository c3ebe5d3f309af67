/*
 * test_mcp_server.c — the MCP server's sessions (src/mcp/server.c) through
 * a transport of the test's own that records what the session sends and
 * answers the session's questions from the test thread, as a real client
 * would: the lifecycle (version negotiation, calls before initialize, a
 * second initialize), tools/list (every page of a small page size adds up
 * to one big page; a bad cursor; annotations; hide_denied both ways),
 * tools/call (success, denied, invalid, unknown tool, malformed params),
 * elicitation (accept runs the call, decline denies it, no capability
 * queues it), heartbeat progress and cancellation of a running command
 * (no response, the ledger says failed with applied unknown), calls in
 * parallel, freeing a session while a call runs, distinct request ids, a
 * token session never asked, one session's share of the call threads, and
 * back-pressure that never stops the reader while calls wait for answers,
 * one principal flooding the server while another is served, and calls
 * waiting for the client's answer parked off the thread shares.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "toolgate.h"
#include "mcp/server.h"

static char ws[64];

/* ---- the recording transport ---- */

typedef struct rec {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	json_t         *msgs;   /* every message sent, in order */
	int             ended;  /* final sends with no text (cancelled requests) */
} rec;

static int rec_send(void *arg, const json_t *related, int final, const char *text, size_t len)
{
	rec *r = arg;
	pthread_mutex_lock(&r->mu);
	if (text) {
		json_error_t je;
		json_t *m = json_loadb(text, len, 0, &je);
		assert_non_null(m);
		assert_null(memchr(text, '\n', len)); /* one line per message */
		json_array_append_new(r->msgs, m);
	} else if (final) {
		r->ended++;
	}                                     /* else a probe before a call starts */
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return 0;
}

static void rec_init(rec *r)
{
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->msgs = json_array();
	r->ended = 0;
}

static void rec_free(rec *r)
{
	json_decref(r->msgs);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
}

/* Does m match: the response to id (method NULL), or a message with this
 * method (id NULL: any)? */
static int matches(const json_t *m, const json_t *id, const char *method)
{
	const char *mm = json_string_value(json_object_get(m, "method"));
	if (method)
		return mm && !strcmp(mm, method);
	return !mm && json_equal(json_object_get(m, "id"), id);
}

/* Wait up to ms for the response to jid (method NULL) or a message with
 * this method; a new reference, or NULL. */
static json_t *wait_for_id(rec *r, const json_t *jid, const char *method, int ms)
{
	json_t *found = NULL;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&r->mu);
	for (;;) {
		size_t i;
		json_t *m;
		json_array_foreach(r->msgs, i, m)
			if (matches(m, jid, method)) {
				found = json_incref(m);
				break;
			}
		if (found || pthread_cond_timedwait(&r->cv, &r->mu, &until) != 0)
			break;
	}
	pthread_mutex_unlock(&r->mu);
	return found;
}

/* Wait up to ms for the response to an integer id, or a message with this
 * method (id ignored); a new reference, or NULL. */
static json_t *wait_for(rec *r, json_int_t id, const char *method, int ms)
{
	json_t *jid = json_integer(id);
	json_t *found = wait_for_id(r, jid, method, ms);
	json_decref(jid);
	return found;
}

static size_t count(rec *r, const char *method)
{
	size_t n = 0, i;
	json_t *m;
	pthread_mutex_lock(&r->mu);
	json_array_foreach(r->msgs, i, m)
		n += matches(m, NULL, method);
	pthread_mutex_unlock(&r->mu);
	return n;
}

static void handle(tgi_mcp_session *ss, const char *fmt, ...)
{
	char text[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	tgi_mcp_session_handle(ss, text, strlen(text));
}

/* Send a request and wait for its response (new reference). */
static json_t *rpc(rec *r, tgi_mcp_session *ss, json_int_t id, const char *method,
                   const char *params)
{
	handle(ss, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"%s\",\"params\":%s}", (long long)id,
	       method, params ? params : "{}");
	json_t *m = wait_for(r, id, NULL, 20000);
	assert_non_null(m);
	return m;
}

static int error_code(const json_t *m)
{
	return (int)json_integer_value(json_object_get(json_object_get(m, "error"), "code"));
}

/* The envelope of a tools/call response (_meta["toolgate/envelope"]). */
static json_t *envelope_of(const json_t *m)
{
	return json_object_get(json_object_get(json_object_get(m, "result"), "_meta"),
	                       "toolgate/envelope");
}

static const char *status_of(const json_t *m)
{
	return json_string_value(json_object_get(envelope_of(m), "status"));
}

/* What the model reads in Claude Code and Codex. */
static json_t *structured_of(const json_t *m)
{
	return json_object_get(json_object_get(m, "result"), "structuredContent");
}

static const char *text_of(const json_t *m)
{
	return json_string_value(json_object_get(
	    json_array_get(json_object_get(json_object_get(m, "result"), "content"), 0), "text"));
}

/* ---- fixtures ---- */

static void put(const char *name, const char *text)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", ws, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static const char config_yaml[] =
	"sandbox: danger-full-access\n"
	"loop_detection: {enabled: false}\n"   /* the same calls at once on purpose */
	"permissions:\n"
	"  allow: [\"shell(sleep *)\", echo, typed, renamed]\n"
	"  deny: [\"search_files\", \"read_file(./secret.txt)\", \"list_dir(./private/**)\"]\n"
	"mcp: {strip_client_args: [client_extra]}\n"
	"tools:\n"
	"  echo:\n"                          /* prints the call JSON it gets: its args */
	"    description: Echo the call.\n"
	"    input_schema:\n"
	"      type: object\n"
	"      properties: {text: {type: string}, wait_for_previous: {type: boolean}}\n"
	"      additionalProperties: false\n"
	"    command: [cat]\n"
	"    read_only: true\n"
	"  typed:\n"                         /* an output schema, with $defs */
	"    description: Typed output.\n"
	"    input_schema: {type: object, properties: {n: {type: integer}}}\n"
	"    output_schema:\n"
	"      type: object\n"
	"      properties: {args: {$ref: \"#/$defs/args\"}}\n"
	"      $defs: {args: {type: object}}\n"
	"    command: [cat]\n"
	"    read_only: true\n"
	"  renamed:\n"                       /* a deprecated field: a warning for the model */
	"    description: Renamed field.\n"
	"    input_schema: {type: object, properties: {title: {type: string}}, "
	"additionalProperties: false}\n"
	"    aliases: {name: title}\n"
	"    command: [cat]\n"
	"    read_only: true\n";

static const char shown_yaml[] =
	"hide_denied: false\n"
	"permissions:\n"
	"  deny: [\"search_files\"]\n";

static const char principals_yaml[] =
	"sandbox: danger-full-access\n"
	"loop_detection: {enabled: false}\n"
	"default_principal: alice\n"
	"principals:\n"
	"  alice: {roles: [dev]}\n"
	"  bob:   {roles: [dev]}\n"
	"roles:\n"
	"  dev: {allow: [\"shell(sleep *)\", read_file], ask: [write_file]}\n";

static const char bypass_yaml[] = "mode: bypassPermissions\nsandbox: danger-full-access\n"
                                  "loop_detection: {enabled: false}\n"; /* repeats on purpose */

static int setup(void **state)
{
	strcpy(ws, "/tmp/tg-mcp.XXXXXX");
	assert_non_null(mkdtemp(ws));
	put("toolgate.yaml", config_yaml);
	put("bypass.yaml", bypass_yaml);
	put("principals.yaml", principals_yaml);
	put("shown.yaml", shown_yaml);
	put("hello.txt", "one\ntwo\nthree\n");
	put("secret.txt", "the secret\n");
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

typedef struct fx {
	tg_gate         *g;
	tgi_mcp_server  *s;
	tgi_mcp_session *ss;
	rec              r;
} fx;

static void fx_open_via(fx *f, const char *config, size_t page_size, const char *via)
{
	char cfg[128];
	snprintf(cfg, sizeof cfg, "%s/%s", ws, config);
	tg_options o = {.config_path = cfg, .workspace = ws, .sync_full = 0};
	char *err = NULL;
	int rc = tg_gate_open(&o, &f->g, &err);
	if (rc)
		fprintf(stderr, "open: %s\n", err);
	assert_int_equal(rc, 0);
	tg_serve_options so = {.page_size = page_size, .progress_ms = 100, .elicit_timeout_s = 20,
	                       .approvals_via = via};
	f->s = tgi_mcp_server_new(f->g, &so);
	rec_init(&f->r);
	f->ss = tgi_mcp_session_new(f->s, NULL, NULL, rec_send, &f->r);
}

static void fx_open(fx *f, const char *config, size_t page_size)
{
	fx_open_via(f, config, page_size, NULL);
}

/* Drop the recorded responses to id (so that the same id can be used again). */
static void forget(rec *r, json_int_t id)
{
	json_t *jid = json_integer(id);
	pthread_mutex_lock(&r->mu);
	for (size_t i = json_array_size(r->msgs); i-- > 0;)
		if (matches(json_array_get(r->msgs, i), jid, NULL))
			json_array_remove(r->msgs, i);
	pthread_mutex_unlock(&r->mu);
	json_decref(jid);
}

static void fx_init(fx *f, const char *caps)
{
	char params[512];
	snprintf(params, sizeof params,
	         "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":%s,"
	         "\"clientInfo\":{\"name\":\"test\",\"version\":\"1\"}}", caps ? caps : "{}");
	json_t *m = rpc(&f->r, f->ss, 1, "initialize", params);
	assert_string_equal(json_string_value(json_object_get(json_object_get(m, "result"),
	                                                      "protocolVersion")), "2025-11-25");
	json_decref(m);
	handle(f->ss, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

static void fx_close(fx *f)
{
	tgi_mcp_session_free(f->ss);
	tgi_mcp_server_free(f->s);
	rec_free(&f->r);
	tg_gate_close(f->g);
}

/* ---- lifecycle ---- */

static void test_lifecycle(void **state)
{
	fx f;
	fx_open(&f, "toolgate.yaml", 0);

	json_t *m = rpc(&f.r, f.ss, 1, "ping", NULL); /* ping is fine before initialize */
	assert_non_null(json_object_get(m, "result"));
	json_decref(m);
	m = rpc(&f.r, f.ss, 2, "tools/list", NULL);
	assert_int_equal(error_code(m), -32600);
	json_decref(m);

	m = rpc(&f.r, f.ss, 3, "initialize",
	        "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
	        "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}");
	json_t *res = json_object_get(m, "result");
	assert_string_equal(json_string_value(json_object_get(res, "protocolVersion")), "2025-06-18");
	assert_string_equal(json_string_value(json_object_get(json_object_get(res, "serverInfo"),
	                                                      "name")), "toolgate");
	assert_true(json_is_true(json_object_get(
	    json_object_get(json_object_get(res, "capabilities"), "tools"), "listChanged")));
	assert_non_null(json_object_get(json_object_get(res, "capabilities"), "logging"));
	json_decref(m);
	assert_string_equal(tgi_mcp_session_version(f.ss), "2025-06-18");

	m = rpc(&f.r, f.ss, 4, "initialize",
	        "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}");
	assert_int_equal(error_code(m), -32600);
	json_decref(m);

	m = rpc(&f.r, f.ss, 5, "server/discover", NULL);
	assert_int_equal(error_code(m), -32601);
	json_decref(m);
	m = rpc(&f.r, f.ss, 6, "logging/setLevel", "{\"level\":\"loud\"}");
	assert_int_equal(error_code(m), -32602);
	json_decref(m);
	m = rpc(&f.r, f.ss, 7, "logging/setLevel", "{\"level\":\"warning\"}");
	assert_non_null(json_object_get(m, "result"));
	json_decref(m);

	/* bad JSON gets -32700 with a null id; an unknown notification nothing */
	size_t before = json_array_size(f.r.msgs);
	handle(f.ss, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}");
	assert_int_equal(json_array_size(f.r.msgs), before);
	tgi_mcp_session_handle(f.ss, "{nope", 5);
	json_t *last = json_array_get(f.r.msgs, json_array_size(f.r.msgs) - 1);
	assert_int_equal(error_code(last), -32700);
	assert_true(json_is_null(json_object_get(last, "id")));
	fx_close(&f);

	/* a version we do not speak is answered with ours */
	fx_open(&f, "toolgate.yaml", 0);
	m = rpc(&f.r, f.ss, 1, "initialize",
	        "{\"protocolVersion\":\"2099-01-01\",\"capabilities\":{}}");
	assert_string_equal(json_string_value(json_object_get(json_object_get(m, "result"),
	                                                      "protocolVersion")), "2025-11-25");
	json_decref(m);
	fx_close(&f);
}

/* ---- tools/list ---- */

static json_t *find_tool(json_t *tools, const char *name)
{
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t)
		if (!strcmp(json_string_value(json_object_get(t, "name")), name))
			return t;
	return NULL;
}

static void test_list_pages(void **state)
{
	fx big, small;
	fx_open(&big, "toolgate.yaml", 0);
	fx_init(&big, NULL);
	json_t *m = rpc(&big.r, big.ss, 2, "tools/list", NULL);
	json_t *all = json_object_get(json_object_get(m, "result"), "tools");
	assert_null(json_object_get(json_object_get(m, "result"), "nextCursor"));
	assert_true(json_array_size(all) >= 4);

	/* a bare deny hides search_files; a deny with a specifier hides nothing */
	assert_null(find_tool(all, "search_files"));
	json_t *rf = find_tool(all, "read_file");
	json_t *wf = find_tool(all, "write_file");
	assert_non_null(rf);
	assert_non_null(wf);
	assert_non_null(find_tool(all, "list_dir"));
	assert_string_equal(json_string_value(json_object_get(rf, "title")), "Read file");
	assert_true(json_is_object(json_object_get(rf, "inputSchema")));
	assert_true(json_is_true(json_object_get(json_object_get(rf, "annotations"), "readOnlyHint")));
	assert_true(json_is_false(json_object_get(json_object_get(wf, "annotations"), "readOnlyHint")));

	fx_open(&small, "toolgate.yaml", 2);
	fx_init(&small, NULL);
	json_t *walked = json_array();
	char params[128] = "{}";
	for (int page = 0; page < 20; page++) {
		json_t *p = rpc(&small.r, small.ss, 10 + page, "tools/list", params);
		json_t *res = json_object_get(p, "result");
		json_t *tools = json_object_get(res, "tools");
		assert_true(json_array_size(tools) <= 2);
		json_array_extend(walked, tools);
		const char *next = json_string_value(json_object_get(res, "nextCursor"));
		if (next)
			snprintf(params, sizeof params, "{\"cursor\":\"%s\"}", next);
		json_decref(p);
		if (!next)
			break;
	}
	assert_true(json_equal(walked, all));
	json_decref(walked);

	json_t *bad = rpc(&small.r, small.ss, 99, "tools/list", "{\"cursor\":\"tg1:x\"}");
	assert_int_equal(error_code(bad), -32602);
	json_decref(bad);
	bad = rpc(&small.r, small.ss, 98, "tools/list", "{\"cursor\":7}");
	assert_int_equal(error_code(bad), -32602);
	json_decref(bad);
	json_decref(m);
	fx_close(&small);
	fx_close(&big);

	/* hide_denied: false shows what a bare deny forbids */
	fx shown;
	fx_open(&shown, "shown.yaml", 0);
	fx_init(&shown, NULL);
	m = rpc(&shown.r, shown.ss, 2, "tools/list", NULL);
	assert_non_null(find_tool(json_object_get(json_object_get(m, "result"), "tools"),
	                          "search_files"));
	json_decref(m);
	fx_close(&shown);
}

/* ---- tools/call ---- */

static void test_call_outcomes(void **state)
{
	fx f;
	fx_open(&f, "toolgate.yaml", 0);
	fx_init(&f, NULL);

	json_t *m = rpc(&f.r, f.ss, 2, "tools/call",
	                "{\"name\":\"read_file\",\"arguments\":{\"path\":\"hello.txt\"}}");
	assert_string_equal(status_of(m), "persisted");
	assert_true(json_is_false(json_object_get(json_object_get(m, "result"), "isError")));
	assert_non_null(strstr(text_of(m), "two"));
	/* the model reads the output, not the envelope; content is its serialization */
	json_t *sc = structured_of(m);
	assert_true(json_equal(sc, json_object_get(envelope_of(m), "output")));
	assert_int_equal(json_integer_value(json_object_get(sc, "total_lines")), 3);
	assert_null(json_object_get(sc, "op_id"));
	assert_null(json_object_get(sc, "stages"));
	json_t *back = json_loads(text_of(m), 0, NULL);
	assert_true(json_equal(back, sc));
	json_decref(back);
	assert_non_null(json_string_value(json_object_get(envelope_of(m), "op_id")));
	assert_true(json_is_array(json_object_get(envelope_of(m), "stages")));
	json_decref(m);

	m = rpc(&f.r, f.ss, 3, "tools/call",
	        "{\"name\":\"read_file\",\"arguments\":{\"path\":\"secret.txt\"}}");
	assert_string_equal(status_of(m), "denied");
	assert_true(json_is_true(json_object_get(json_object_get(m, "result"), "isError")));
	assert_null(strstr(text_of(m), "the secret"));
	/* a call that did not persist: its status and the sentence, nothing else */
	sc = structured_of(m);
	assert_string_equal(json_string_value(json_object_get(sc, "status")), "denied");
	assert_string_equal(json_string_value(json_object_get(json_object_get(sc, "error"), "kind")),
	                    "not_permitted");
	assert_non_null(json_string_value(json_object_get(json_object_get(sc, "error"), "message")));
	assert_null(json_object_get(json_object_get(sc, "error"), "rule"));
	assert_null(json_object_get(sc, "output"));
	assert_int_equal(json_object_size(sc), 2);
	/* the content of an error is its sentence */
	char want_text[1200];
	snprintf(want_text, sizeof want_text, "denied: %s",
	         json_string_value(json_object_get(json_object_get(sc, "error"), "message")));
	assert_string_equal(text_of(m), want_text);
	json_decref(m);

	m = rpc(&f.r, f.ss, 4, "tools/call",
	        "{\"name\":\"read_file\",\"arguments\":{\"path\":\"hello.txt\",\"limit\":\"ten\"}}");
	assert_string_equal(status_of(m), "invalid");
	json_t *err = json_object_get(json_object_get(structured_of(m), "error"), "field");
	assert_string_equal(json_string_value(err), "/limit");
	json_decref(m);

	/* an unknown tool is a result with isError, not a protocol error */
	m = rpc(&f.r, f.ss, 5, "tools/call", "{\"name\":\"no_such_tool\",\"arguments\":{}}");
	assert_string_equal(status_of(m), "invalid");
	assert_non_null(strstr(text_of(m), "unknown tool"));
	json_decref(m);

	/* malformed requests are protocol errors */
	m = rpc(&f.r, f.ss, 6, "tools/call", "{\"arguments\":{}}");
	assert_int_equal(error_code(m), -32602);
	json_decref(m);
	m = rpc(&f.r, f.ss, 7, "tools/call", "{\"name\":\"read_file\",\"arguments\":[1]}");
	assert_int_equal(error_code(m), -32602);
	json_decref(m);
	m = rpc(&f.r, f.ss, 8, "tools/call",
	        "{\"name\":\"read_file\",\"arguments\":{},\"_meta\":{\"progressToken\":[1]}}");
	assert_int_equal(error_code(m), -32602);
	json_decref(m);

	/* no elicitation capability: an ask is queued, with the command that approves it */
	m = rpc(&f.r, f.ss, 9, "tools/call",
	        "{\"name\":\"write_file\",\"arguments\":{\"path\":\"new.txt\",\"content\":\"x\"}}");
	assert_string_equal(status_of(m), "pending");
	assert_non_null(strstr(text_of(m), "toolgate approvals approve "));
	sc = structured_of(m);
	const char *aid = json_string_value(json_object_get(json_object_get(sc, "error"),
	                                                    "approval_id"));
	assert_non_null(aid);
	char want[96];
	snprintf(want, sizeof want, "toolgate approvals approve %s", aid);
	assert_string_equal(json_string_value(json_object_get(json_object_get(sc, "error"),
	                                                      "approve_with")), want);
	json_decref(m);
	char p[128];
	snprintf(p, sizeof p, "%s/new.txt", ws);
	assert_int_equal(access(p, F_OK), -1);
	fx_close(&f);
}

/* The arguments clients add on their own: removed where the tool's schema
 * does not declare them (and said in the trace), kept where it does. */
static void test_client_args(void **state)
{
	fx f;
	fx_open(&f, "toolgate.yaml", 0);
	fx_init(&f, NULL);

	/* Gemini CLI's wait_for_previous on a tool that does not take it:
	 * validation would refuse it (additionalProperties: false) */
	json_t *m = rpc(&f.r, f.ss, 2, "tools/call",
	                "{\"name\":\"read_file\",\"arguments\":{\"path\":\"hello.txt\","
	                "\"wait_for_previous\":true,\"client_extra\":1}}");
	assert_string_equal(status_of(m), "persisted");
	json_t *stages = json_object_get(envelope_of(m), "stages");
	json_t *trace = json_array_get(stages, 1);
	assert_string_equal(json_string_value(json_object_get(trace, "stage")), "client_args");
	json_t *removed = json_pack("[s, s]", "wait_for_previous", "client_extra");
	assert_true(json_equal(json_object_get(trace, "removed"), removed));
	json_decref(removed);
	const char *op = json_string_value(json_object_get(envelope_of(m), "op_id"));

	/* the ledger row shows it too */
	tg_log_query q = {.tool = "read_file"};
	char *err = NULL;
	char *log = tg_log(f.g, &q, &err);
	assert_non_null(log);
	json_t *ops = json_loads(log, 0, NULL);
	free(log);
	json_t *row = json_array_get(ops, json_array_size(ops) - 1);
	json_t *env = json_object_get(row, "envelope");
	assert_string_equal(json_string_value(json_object_get(env, "op_id")), op);
	assert_true(json_equal(json_array_get(json_object_get(env, "stages"), 1), trace));
	json_decref(ops);
	json_decref(m);

	/* without one: no record */
	m = rpc(&f.r, f.ss, 3, "tools/call",
	        "{\"name\":\"read_file\",\"arguments\":{\"path\":\"hello.txt\"}}");
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(json_object_get(envelope_of(m), "stages"), 1), "stage")), "validate");
	json_decref(m);

	/* a tool that declares wait_for_previous gets it; client_extra, which it
	 * does not declare, is removed before validation refuses it */
	m = rpc(&f.r, f.ss, 4, "tools/call",
	        "{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\",\"wait_for_previous\":true,"
	        "\"client_extra\":\"x\"}}");
	assert_string_equal(status_of(m), "persisted");
	json_t *args = json_object_get(structured_of(m), "args");
	assert_true(json_is_true(json_object_get(args, "wait_for_previous")));
	assert_null(json_object_get(args, "client_extra"));
	json_decref(m);

	/* an argument nobody named is still refused */
	m = rpc(&f.r, f.ss, 5, "tools/call",
	        "{\"name\":\"read_file\",\"arguments\":{\"path\":\"hello.txt\",\"other\":1}}");
	assert_string_equal(status_of(m), "invalid");
	json_decref(m);
	fx_close(&f);
}

/* structuredContent as the model reads it, per case: a tool with an output
 * schema (listed as the tool's schema or the status object), a non-object
 * output, a warning the model must read, a replay. */
static void test_result_shapes(void **state)
{
	fx f;
	fx_open(&f, "toolgate.yaml", 0);
	fx_init(&f, NULL);

	json_t *l = rpc(&f.r, f.ss, 2, "tools/list", NULL);
	json_t *tools = json_object_get(json_object_get(l, "result"), "tools");
	json_t *os = json_object_get(find_tool(tools, "typed"), "outputSchema");
	assert_string_equal(json_string_value(json_object_get(os, "type")), "object");
	json_t *any = json_object_get(os, "anyOf");
	assert_int_equal(json_array_size(any), 2);
	/* the tool's $defs at the top, where its "#/$defs/args" points */
	assert_non_null(json_object_get(json_object_get(os, "$defs"), "args"));
	assert_null(json_object_get(json_array_get(any, 0), "$defs"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(
	    json_array_get(any, 0), "properties"), "args"), "$ref")), "#/$defs/args");
	json_t *req = json_object_get(json_array_get(any, 1), "required");
	assert_string_equal(json_string_value(json_array_get(req, 0)), "status");
	/* a tool without an output schema lists none */
	assert_null(json_object_get(find_tool(tools, "read_file"), "outputSchema"));
	json_decref(l);

	/* the output itself, which the tool's schema describes */
	json_t *m = rpc(&f.r, f.ss, 3, "tools/call", "{\"name\":\"typed\",\"arguments\":{\"n\":1}}");
	assert_string_equal(status_of(m), "persisted");
	json_t *sc = structured_of(m);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(sc, "args"), "n")), 1);
	assert_null(json_object_get(sc, "status"));
	json_decref(m);

	/* a warning the model must read: the status object carries it */
	m = rpc(&f.r, f.ss, 4, "tools/call",
	        "{\"name\":\"renamed\",\"arguments\":{\"name\":\"x\"}}");
	assert_string_equal(status_of(m), "persisted");
	sc = structured_of(m);
	assert_string_equal(json_string_value(json_object_get(sc, "status")), "persisted");
	assert_non_null(strstr(json_string_value(json_array_get(json_object_get(sc, "warnings"), 0)),
	                       "deprecated"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    json_object_get(sc, "output"), "args"), "title")), "x");
	json_decref(m);

	/* a non-object output without an output schema: text, no structuredContent */
	m = rpc(&f.r, f.ss, 5, "tools/call",
	        "{\"name\":\"shell\",\"arguments\":{\"command\":\"sleep 0\"}}");
	assert_string_equal(status_of(m), "persisted");
	json_t *out = json_object_get(envelope_of(m), "output");
	if (!json_is_object(out))
		assert_null(structured_of(m));
	json_decref(m);

	/* a dry run: the status object with the plan as its output */
	m = rpc(&f.r, f.ss, 6, "tools/call",
	        "{\"name\":\"read_file\",\"arguments\":{\"path\":\"hello.txt\"},"
	        "\"_meta\":{\"dry_run\":true}}");
	assert_string_equal(status_of(m), "dry_run");
	assert_true(json_is_false(json_object_get(json_object_get(m, "result"), "isError")));
	sc = structured_of(m);
	assert_string_equal(json_string_value(json_object_get(sc, "status")), "dry_run");
	assert_string_equal(json_string_value(json_object_get(json_object_get(sc, "output"),
	                                                      "would_run")), "read_file");
	json_decref(m);
	fx_close(&f);

	/* a replay: the original output, and that it is one */
	fx_open(&f, "bypass.yaml", 0);
	fx_init(&f, NULL);
	for (int i = 0; i < 2; i++) {
		m = rpc(&f.r, f.ss, 7, "tools/call",
		        "{\"name\":\"write_file\",\"arguments\":{\"path\":\"r.txt\",\"content\":\"x\"}}");
		assert_string_equal(status_of(m), i ? "replayed" : "persisted");
		forget(&f.r, 7);
		sc = structured_of(m);
		if (i) {
			assert_string_equal(json_string_value(json_object_get(sc, "status")), "replayed");
			assert_true(json_equal(json_object_get(sc, "output"),
			                       json_object_get(envelope_of(m), "output")));
			assert_true(json_is_false(json_object_get(json_object_get(m, "result"), "isError")));
		}
		json_decref(m);
	}
	fx_close(&f);
}

/* Answer the next elicitation/create with action; content (JSON text, may
 * be NULL) goes with an accept.  The question, as asked (new reference). */
static json_t *answer_elicitation(fx *f, const char *action, const char *content)
{
	json_t *q = wait_for(&f->r, 0, "elicitation/create", 20000);
	assert_non_null(q);
	json_t *params = json_object_get(q, "params");
	const char *msg = json_string_value(json_object_get(params, "message"));
	assert_non_null(strstr(msg, "write_file"));
	assert_non_null(strstr(msg, "elicited.txt"));   /* the exact arguments are shown */
	assert_string_equal(json_string_value(json_object_get(params, "mode")), "form");
	json_t *id = json_object_get(q, "id");
	char *ids = json_dumps(id, JSON_ENCODE_ANY);
	if (content)
		handle(f->ss, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"action\":\"%s\","
		              "\"content\":%s}}", ids, action, content);
	else
		handle(f->ss, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"action\":\"%s\"}}", ids,
		       action);
	free(ids);
	/* the same question is not answered twice: remove it from the record */
	pthread_mutex_lock(&f->r.mu);
	size_t i;
	json_t *m;
	json_array_foreach(f->r.msgs, i, m)
		if (json_equal(m, q)) {
			json_array_remove(f->r.msgs, i);
			break;
		}
	pthread_mutex_unlock(&f->r.mu);
	return q;
}

/* A write that asks, as request id; its response after action (content). */
static json_t *elicited_call(fx *f, int id, const char *action, const char *content,
                             json_t **question)
{
	handle(f->ss, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
	              "\"name\":\"write_file\",\"arguments\":{\"path\":\"elicited.txt\","
	              "\"content\":\"%d\"}}}", id, id);
	json_t *q = answer_elicitation(f, action, content);
	if (question)
		*question = q;
	else
		json_decref(q);
	json_t *m = wait_for(&f->r, id, NULL, 20000);
	assert_non_null(m);
	return m;
}

/* The last event of type for the newest write_file call in the ledger (new
 * reference), or NULL. */
static json_t *last_event(fx *f, const char *type)
{
	tg_log_query q = {.tool = "write_file"};
	char *err = NULL;
	char *log = tg_log(f->g, &q, &err);
	assert_non_null(log);
	json_t *ops = json_loads(log, 0, NULL);
	free(log);
	json_t *evs = json_object_get(json_array_get(ops, json_array_size(ops) - 1), "events");
	json_t *found = NULL, *ev;
	size_t i;
	json_array_foreach(evs, i, ev)
		if (!strcmp(json_string_value(json_object_get(ev, "type")), type))
			found = ev;
	json_incref(found);
	json_decref(ops);
	return found;
}

static void test_elicitation(void **state)
{
	fx f;
	char p[128];
	snprintf(p, sizeof p, "%s/elicited.txt", ws);
	fx_open(&f, "toolgate.yaml", 0);                  /* approvals.via: both */
	fx_init(&f, "{\"elicitation\":{}}");

	/* the form asks for nothing but an optional reason */
	json_t *q = NULL;
	json_t *m = elicited_call(&f, 2, "decline", NULL, &q);
	json_t *schema = json_object_get(json_object_get(q, "params"), "requestedSchema");
	json_t *props = json_object_get(schema, "properties");
	assert_int_equal(json_object_size(props), 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(props, "reason"),
	                                                      "type")), "string");
	assert_true(json_array_size(json_object_get(schema, "required")) == 0);
	json_decref(q);
	/* decline: denied, nothing written */
	assert_string_equal(status_of(m), "denied");
	json_decref(m);
	assert_int_equal(access(p, F_OK), -1);

	/* accept with nothing filled in (Enter, the Accept button): approved */
	m = elicited_call(&f, 3, "accept", "{}", NULL);
	assert_string_equal(status_of(m), "persisted");
	json_decref(m);
	assert_int_equal(access(p, F_OK), 0);
	unlink(p);

	/* accept without content at all: approved too */
	m = elicited_call(&f, 4, "accept", NULL, NULL);
	assert_string_equal(status_of(m), "persisted");
	json_decref(m);
	unlink(p);

	/* accept with a reason: approved, the reason recorded */
	m = elicited_call(&f, 5, "accept", "{\"reason\":\"needed for the release\"}", NULL);
	assert_string_equal(status_of(m), "persisted");
	json_decref(m);
	json_t *ev = last_event(&f, "tool.call.approved");
	assert_non_null(ev);
	char *data = json_dumps(json_object_get(ev, "data"), JSON_COMPACT);
	assert_non_null(strstr(data, "needed for the release"));
	free(data);
	json_decref(ev);
	unlink(p);

	/* cancel (what a headless client answers): queued for the owner */
	m = elicited_call(&f, 6, "cancel", NULL, NULL);
	assert_string_equal(status_of(m), "pending");
	assert_true(json_is_true(json_object_get(json_object_get(m, "result"), "isError")));
	assert_non_null(strstr(text_of(m), "toolgate approvals approve "));
	json_decref(m);
	assert_int_equal(access(p, F_OK), -1);
	fx_close(&f);

	/* approvals via elicitation only: cancel denies */
	fx_open_via(&f, "toolgate.yaml", 0, "elicitation");
	fx_init(&f, "{\"elicitation\":{}}");
	m = elicited_call(&f, 2, "cancel", NULL, NULL);
	assert_string_equal(status_of(m), "denied");
	json_decref(m);
	m = elicited_call(&f, 3, "accept", "{}", NULL);
	assert_string_equal(status_of(m), "persisted");
	json_decref(m);
	unlink(p);
	fx_close(&f);

	/* approvals via the queue: nobody is asked */
	fx_open_via(&f, "toolgate.yaml", 0, "queue");
	fx_init(&f, "{\"elicitation\":{}}");
	m = rpc(&f.r, f.ss, 2, "tools/call",
	        "{\"name\":\"write_file\",\"arguments\":{\"path\":\"elicited.txt\",\"content\":\"q\"}}");
	assert_string_equal(status_of(m), "pending");
	json_decref(m);
	assert_int_equal(count(&f.r, "elicitation/create"), 0);
	assert_int_equal(access(p, F_OK), -1);
	fx_close(&f);
}

static void test_progress_and_cancel(void **state)
{
	fx f;
	fx_open(&f, "toolgate.yaml", 0);
	fx_init(&f, NULL);
	handle(f.ss, "{\"jsonrpc\":\"2.0\",\"id\":\"slow\",\"method\":\"tools/call\",\"params\":{"
	             "\"name\":\"shell\",\"arguments\":{\"command\":\"sleep 30\"},"
	             "\"_meta\":{\"progressToken\":\"tok\"}}}");
	json_t *p = wait_for(&f.r, 0, "notifications/progress", 10000);
	assert_non_null(p);
	assert_string_equal(json_string_value(json_object_get(json_object_get(p, "params"),
	                                                      "progressToken")), "tok");
	json_decref(p);
	/* progress values only grow */
	usleep(350 * 1000);
	double last = -1;
	size_t i;
	json_t *m;
	pthread_mutex_lock(&f.r.mu);
	json_array_foreach(f.r.msgs, i, m)
		if (matches(m, NULL, "notifications/progress")) {
			double v = json_number_value(json_object_get(json_object_get(m, "params"), "progress"));
			assert_true(v > last);
			last = v;
		}
	pthread_mutex_unlock(&f.r.mu);
	assert_true(count(&f.r, "notifications/progress") >= 2);

	double t0 = (double)time(NULL);
	handle(f.ss, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
	             "\"requestId\":\"slow\",\"reason\":\"user\"}}");
	/* no response comes for a cancelled request, but its end is signalled */
	for (int k = 0; k < 200; k++) {
		pthread_mutex_lock(&f.r.mu);
		int ended = f.r.ended;
		pthread_mutex_unlock(&f.r.mu);
		if (ended)
			break;
		usleep(50 * 1000);
	}
	assert_int_equal(f.r.ended, 1);
	assert_true((double)time(NULL) - t0 < 10);
	pthread_mutex_lock(&f.r.mu);
	json_array_foreach(f.r.msgs, i, m)
		assert_false(json_is_string(json_object_get(m, "id")) &&
		             !strcmp(json_string_value(json_object_get(m, "id")), "slow"));
	pthread_mutex_unlock(&f.r.mu);

	tg_log_query q = {.tool = "shell"};
	char *err = NULL;
	char *log = tg_log(f.g, &q, &err);
	assert_non_null(log);
	json_t *ops = json_loads(log, 0, NULL);
	free(log);
	json_t *env = json_object_get(json_array_get(ops, json_array_size(ops) - 1), "envelope");
	assert_string_equal(json_string_value(json_object_get(env, "status")), "failed");
	assert_string_equal(json_string_value(json_object_get(json_object_get(env, "error"),
	                                                      "applied")), "unknown");
	json_decref(ops);
	fx_close(&f);
}

/* Eight calls at once: eight answers, each to its own id. */
static void test_parallel_calls(void **state)
{
	fx f;
	fx_open(&f, "toolgate.yaml", 0);
	fx_init(&f, NULL);
	for (int i = 0; i < 8; i++)
		handle(f.ss, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
		             "\"name\":\"read_file\",\"arguments\":{\"path\":\"hello.txt\"}}}", 100 + i);
	for (int i = 0; i < 8; i++) {
		json_t *m = wait_for(&f.r, 100 + i, NULL, 20000);
		assert_non_null(m);
		assert_string_equal(status_of(m), "persisted");
		json_decref(m);
	}
	/* a session freed while a call runs cancels it and returns */
	handle(f.ss, "{\"jsonrpc\":\"2.0\",\"id\":200,\"method\":\"tools/call\",\"params\":{"
	             "\"name\":\"shell\",\"arguments\":{\"command\":\"sleep 30\"}}}");
	usleep(300 * 1000);
	time_t t0 = time(NULL);
	fx_close(&f);
	assert_true(time(NULL) - t0 < 10);
}

/* Request ids that differ are different calls: neither is replayed as the
 * other (ids are part of the idempotency scope of a write). */
static void test_ids_distinct(void **state)
{
	fx f;
	fx_open(&f, "bypass.yaml", 0);
	fx_init(&f, NULL);
	char a[64], b[64];
	memset(a, 'x', 60);
	a[60] = '\0';
	memcpy(b, a, sizeof a);
	b[59] = 'y';                       /* differs only after 50 characters */
	const char *ids[] = {a, b};
	for (int i = 0; i < 2; i++) {
		handle(f.ss, "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tools/call\",\"params\":"
		             "{\"name\":\"write_file\",\"arguments\":{\"path\":\"ids.txt\",\"content\":"
		             "\"%d\"}}}", ids[i], i);
		json_t *jid = json_string(ids[i]);
		json_t *m = wait_for_id(&f.r, jid, NULL, 20000);
		json_decref(jid);
		assert_non_null(m);
		assert_string_equal(status_of(m), "persisted");
		json_decref(m);
	}
	/* 7 and "7" too */
	json_t *m = rpc(&f.r, f.ss, 7, "tools/call",
	                "{\"name\":\"write_file\",\"arguments\":{\"path\":\"one.txt\",\"content\":\"a\"}}");
	assert_string_equal(status_of(m), "persisted");
	json_decref(m);
	handle(f.ss, "{\"jsonrpc\":\"2.0\",\"id\":\"7\",\"method\":\"tools/call\",\"params\":{\"name\":"
	             "\"write_file\",\"arguments\":{\"path\":\"one.txt\",\"content\":\"b\"}}}");
	json_t *jid = json_string("7");
	m = wait_for_id(&f.r, jid, NULL, 20000);
	json_decref(jid);
	assert_non_null(m);
	assert_string_equal(status_of(m), "persisted");   /* not "replayed" as the integer 7 */
	json_decref(m);
	char p[128], got[8] = "";
	snprintf(p, sizeof p, "%s/one.txt", ws);
	FILE *fp = fopen(p, "r");
	assert_non_null(fp);
	assert_non_null(fgets(got, sizeof got, fp));
	fclose(fp);
	assert_string_equal(got, "b");
	fx_close(&f);
}

/* A session that holds a token is a program: its asks go to the queue,
 * never to its own elicitation. */
static void test_token_session_not_asked(void **state)
{
	fx f;
	fx_open(&f, "toolgate.yaml", 0);
	tgi_mcp_session_free(f.ss);
	f.ss = tgi_mcp_session_new(f.s, NULL, "some-token", rec_send, &f.r);
	fx_init(&f, "{\"elicitation\":{}}");
	json_t *m = rpc(&f.r, f.ss, 2, "tools/call",
	                "{\"name\":\"write_file\",\"arguments\":{\"path\":\"t.txt\",\"content\":\"x\"}}");
	assert_non_null(status_of(m));
	assert_string_equal(status_of(m), "pending");
	json_decref(m);
	assert_int_equal(count(&f.r, "elicitation/create"), 0);
	fx_close(&f);
}

/* One session's long calls hold at most SESSION_THREADS (32) call threads:
 * 40 one-second commands run 32 at a time, and another session's call is
 * answered meanwhile. */
static void test_session_thread_share(void **state)
{
	fx a;
	fx_open(&a, "bypass.yaml", 0);
	fx_init(&a, NULL);
	tgi_mcp_session *b = tgi_mcp_session_new(a.s, NULL, NULL, rec_send, &a.r);
	handle(b, "{\"jsonrpc\":\"2.0\",\"id\":900,\"method\":\"initialize\",\"params\":{"
	          "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}");
	for (int i = 0; i < 40; i++)
		handle(a.ss, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
		             "\"name\":\"shell\",\"arguments\":{\"command\":\"echo + >> c.log; sleep 1; "
		             "echo - >> c.log\"}}}", 1000 + i);
	usleep(300 * 1000);
	struct timespec s0, s1;
	clock_gettime(CLOCK_MONOTONIC, &s0);
	handle(b, "{\"jsonrpc\":\"2.0\",\"id\":901,\"method\":\"tools/call\",\"params\":{"
	          "\"name\":\"read_file\",\"arguments\":{\"path\":\"hello.txt\"}}}");
	json_t *m = wait_for(&a.r, 901, NULL, 20000);
	clock_gettime(CLOCK_MONOTONIC, &s1);
	assert_non_null(m);
	assert_string_equal(status_of(m), "persisted");
	json_decref(m);
	/* answered while session a's commands still ran */
	assert_true((s1.tv_sec - s0.tv_sec) + (s1.tv_nsec - s0.tv_nsec) / 1e9 < 1.0);
	for (int i = 0; i < 40; i++) {
		json_t *r = wait_for(&a.r, 1000 + i, NULL, 30000);
		assert_non_null(r);
		assert_string_equal(status_of(r), "persisted");
		json_decref(r);
	}
	char p[128], line[8];
	snprintf(p, sizeof p, "%s/c.log", ws);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	int now = 0, peak = 0, lines = 0;
	while (fgets(line, sizeof line, f)) {
		now += line[0] == '+' ? 1 : -1;
		peak = now > peak ? now : peak;
		lines++;
	}
	fclose(f);
	unlink(p);
	assert_int_equal(lines, 80);
	/* never more at once than the pool's 32; many at once (on a loaded
	 * machine not every one of the 40 starts before the first ends) */
	assert_true(peak <= 32);
	assert_true(peak >= 8);
	tgi_mcp_session_free(b);
	fx_close(&a);
}

/*
 * Back-pressure never stops the reader while a call waits for the client's
 * answer: with 1,024 calls in flight (the session's limit), 32 of them
 * asking and the rest queued behind them, one more call is refused at once
 * with a sentence, the reader goes on to read the answers, and every call
 * ends with the client's answer (denied, nothing written).
 */
static void test_backpressure_asks(void **state)
{
	enum { N = 1024 };
	fx f;
	char p[128];
	snprintf(p, sizeof p, "%s/pressed.txt", ws);
	fx_open(&f, "toolgate.yaml", 0);
	fx_init(&f, "{\"elicitation\":{}}");
	for (int i = 0; i < N; i++)
		handle(f.ss, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
		             "\"name\":\"write_file\",\"arguments\":{\"path\":\"pressed.txt\","
		             "\"content\":\"x\"}}}", 10000 + i);
	json_t *q = wait_for(&f.r, 0, "elicitation/create", 20000);
	assert_non_null(q);
	json_decref(q);

	struct timespec s0, s1;
	clock_gettime(CLOCK_MONOTONIC, &s0);
	handle(f.ss, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
	             "\"name\":\"read_file\",\"arguments\":{\"path\":\"hello.txt\"}}}", 10000 + N);
	clock_gettime(CLOCK_MONOTONIC, &s1);
	/* well under the 20 s the questions would take to time out */
	assert_true((s1.tv_sec - s0.tv_sec) + (s1.tv_nsec - s0.tv_nsec) / 1e9 < 5.0);
	json_t *m = wait_for(&f.r, 10000 + N, NULL, 1000);
	assert_non_null(m);
	assert_int_equal(error_code(m), -32603);
	const char *msg = json_string_value(json_object_get(json_object_get(m, "error"), "message"));
	assert_non_null(msg);
	assert_non_null(strstr(msg, "answer"));
	json_decref(m);

	/* the client declines every question as it comes */
	size_t seen = 0;
	int answered = 0;
	time_t t0 = time(NULL);
	while (answered < N && time(NULL) - t0 < 300) {
		json_t *ids = json_array();
		pthread_mutex_lock(&f.r.mu);
		for (; seen < json_array_size(f.r.msgs); seen++) {
			json_t *x = json_array_get(f.r.msgs, seen);
			if (matches(x, NULL, "elicitation/create"))
				json_array_append(ids, json_object_get(x, "id"));
		}
		pthread_mutex_unlock(&f.r.mu);
		size_t i;
		json_t *id;
		json_array_foreach(ids, i, id) {
			handle(f.ss, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"action\":\"decline\"}}",
			       (long long)json_integer_value(id));
			answered++;
		}
		if (!json_array_size(ids))
			usleep(10 * 1000);
		json_decref(ids);
	}
	assert_int_equal(answered, N);
	for (int i = 0; i < N; i++) {
		m = wait_for(&f.r, 10000 + i, NULL, 20000);
		assert_non_null(m);
		assert_string_equal(status_of(m), "denied");
		json_decref(m);
	}
	assert_int_equal(access(p, F_OK), -1);
	fx_close(&f);
}

/* A session of principal (may be NULL) on f's server, initialized with
 * request id init_id and elicitation declared. */
static tgi_mcp_session *open_session(fx *f, const char *principal, int init_id)
{
	tgi_mcp_session *ss = tgi_mcp_session_new(f->s, principal, NULL, rec_send, &f->r);
	json_t *m = rpc(&f->r, ss, init_id, "initialize",
	                "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"elicitation\":{}}}");
	assert_non_null(json_object_get(m, "result"));
	json_decref(m);
	return ss;
}

/* Seconds until the response to id (read_file of hello.txt, sent now on
 * ss) came, persisted; 99 when none came in 20 s. */
static double served_in(fx *f, tgi_mcp_session *ss, int id)
{
	struct timespec s0, s1;
	clock_gettime(CLOCK_MONOTONIC, &s0);
	handle(ss, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
	           "\"name\":\"read_file\",\"arguments\":{\"path\":\"hello.txt\"}}}", id);
	json_t *m = wait_for(&f->r, id, NULL, 20000);
	clock_gettime(CLOCK_MONOTONIC, &s1);
	if (!m)
		return 99;
	assert_string_equal(status_of(m), "persisted");
	json_decref(m);
	return (s1.tv_sec - s0.tv_sec) + (s1.tv_nsec - s0.tv_nsec) / 1e9;
}

/*
 * One principal floods the server: nine sessions of alice, each with its 32
 * calls at once (the session's share), four of writes that ask the client
 * (nobody answers) and five of slow commands: 288 calls, more than the
 * server's 256 threads.  Alice holds at most her share of the threads
 * (mcp.max_calls_per_principal, 64 by default), so bob's call is served at
 * once, while hers still run and wait.
 */
static void test_principal_share(void **state)
{
	enum { SESSIONS = 9, PER = 32 };
	fx f;
	fx_open(&f, "principals.yaml", 0);
	tgi_mcp_session *alice[SESSIONS];
	for (int i = 0; i < SESSIONS; i++)
		alice[i] = open_session(&f, "alice", 900 + i);
	tgi_mcp_session *bob = open_session(&f, "bob", 950);
	for (int i = 0; i < SESSIONS; i++)
		for (int k = 0; k < PER; k++) {
			int id = 10000 + i * 100 + k;
			if (i >= 4)
				handle(alice[i], "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
				                 "\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":"
				                 "\"sleep 20\"}}}", id);
			else
				handle(alice[i], "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
				                 "\"params\":{\"name\":\"write_file\",\"arguments\":{\"path\":"
				                 "\"flood-%d.txt\",\"content\":\"x\"}}}", id, id);
		}
	/* alice's questions are out: her calls hold what they can */
	for (int n = 0; n < 100 && count(&f.r, "elicitation/create") < 4 * PER; n++)
		usleep(50 * 1000);
	usleep(500 * 1000);
	double t = served_in(&f, bob, 951);
	printf("bob's call was served in %.2f s\n", t);
	/* before any of alice's 20 s commands could end: he did not wait for a
	 * thread she held (a slow, loaded machine takes seconds to start her 64
	 * sandboxes, so the bound is her commands' length, not a guess at speed) */
	assert_true(t < 15.0);
	for (int i = 0; i < SESSIONS; i++)
		tgi_mcp_session_free(alice[i]);
	tgi_mcp_session_free(bob);
	fx_close(&f);
}

/*
 * A call waiting for the client's answer does not hold a call thread's
 * place: 40 writes of one session ask (more than its 32 threads) and
 * nobody answers yet; a read of the same session and one of the same
 * principal's other session are served at once, and when the answers come
 * every write ends with them.
 */
static void test_elicitation_parks(void **state)
{
	enum { N = 40 };
	fx f;
	fx_open(&f, "principals.yaml", 0);
	tgi_mcp_session *a = open_session(&f, "alice", 900);
	tgi_mcp_session *b = open_session(&f, "alice", 901);
	for (int i = 0; i < N; i++)
		handle(a, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
		          "\"name\":\"write_file\",\"arguments\":{\"path\":\"parked.txt\","
		          "\"content\":\"x\"}}}", 1000 + i);
	for (int n = 0; n < 200 && count(&f.r, "elicitation/create") < N; n++)
		usleep(50 * 1000);
	assert_int_equal(count(&f.r, "elicitation/create"), N);   /* all asked at once */
	double t = served_in(&f, a, 2000);
	assert_true(t < 5.0);
	t = served_in(&f, b, 2001);
	assert_true(t < 5.0);
	size_t i;
	json_t *m, *ids = json_array();
	pthread_mutex_lock(&f.r.mu);
	json_array_foreach(f.r.msgs, i, m)
		if (matches(m, NULL, "elicitation/create"))
			json_array_append(ids, json_object_get(m, "id"));
	pthread_mutex_unlock(&f.r.mu);
	json_t *id;
	json_array_foreach(ids, i, id)
		handle(a, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"action\":\"decline\"}}",
		       (long long)json_integer_value(id));
	json_decref(ids);
	for (int k = 0; k < N; k++) {
		m = wait_for(&f.r, 1000 + k, NULL, 20000);
		assert_non_null(m);
		assert_string_equal(status_of(m), "denied");
		json_decref(m);
	}
	tgi_mcp_session_free(a);
	tgi_mcp_session_free(b);
	fx_close(&f);
}

/* mcp.max_calls_per_principal caps the calls one principal runs at once,
 * over all its sessions: 4 here, two sessions of 6 one-second commands. */
static void test_principal_share_configured(void **state)
{
	put("share4.yaml", "mode: bypassPermissions\nsandbox: danger-full-access\n"
	                   "loop_detection: {enabled: false}\nmcp: {max_calls_per_principal: 4}\n");
	fx f;
	fx_open(&f, "share4.yaml", 0);
	tgi_mcp_session *a = open_session(&f, NULL, 900);
	tgi_mcp_session *b = open_session(&f, NULL, 901);
	for (int i = 0; i < 12; i++)
		handle(i % 2 ? a : b, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
		                      "\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":"
		                      "\"echo + >> s.log; sleep 1; echo - >> s.log\"}}}", 1000 + i);
	for (int i = 0; i < 12; i++) {
		json_t *m = wait_for(&f.r, 1000 + i, NULL, 30000);
		assert_non_null(m);
		assert_string_equal(status_of(m), "persisted");
		json_decref(m);
	}
	char p[128], line[8];
	snprintf(p, sizeof p, "%s/s.log", ws);
	FILE *fp = fopen(p, "r");
	assert_non_null(fp);
	int now = 0, peak = 0, lines = 0;
	while (fgets(line, sizeof line, fp)) {
		now += line[0] == '+' ? 1 : -1;
		peak = now > peak ? now : peak;
		lines++;
	}
	fclose(fp);
	unlink(p);
	assert_int_equal(lines, 24);
	assert_true(peak <= 4);
	assert_true(peak >= 2);
	tgi_mcp_session_free(a);
	tgi_mcp_session_free(b);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lifecycle),
		cmocka_unit_test(test_list_pages),
		cmocka_unit_test(test_call_outcomes),
		cmocka_unit_test(test_client_args),
		cmocka_unit_test(test_result_shapes),
		cmocka_unit_test(test_elicitation),
		cmocka_unit_test(test_progress_and_cancel),
		cmocka_unit_test(test_parallel_calls),
		cmocka_unit_test(test_ids_distinct),
		cmocka_unit_test(test_token_session_not_asked),
		cmocka_unit_test(test_session_thread_share),
		cmocka_unit_test(test_backpressure_asks),
		cmocka_unit_test(test_principal_share),
		cmocka_unit_test(test_elicitation_parks),
		cmocka_unit_test(test_principal_share_configured),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
