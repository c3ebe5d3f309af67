/*
 * test_mcp_client.c — the MCP client (src/mcp/client.c) against real
 * servers: @modelcontextprotocol/server-everything over stdio and over
 * Streamable HTTP (installed in tests/mcp/node_modules), and small shell
 * scripts where a misbehaving server is the point (one that ignores its
 * stdin closing, speaks an unknown protocol, never answers, or sends an
 * over-long line).  Without node or the package the node cases are
 * skipped, loudly.  libcurl is loaded only by the first HTTP open; the
 * cases about that run in a fresh copy of this program (it re-executes
 * itself with --curl-child), since a process loads it once.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "mcp/client.h"
#include "mcp/jsonrpc.h"
#include "util/util.h"

#define EVERYTHING "tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

extern char **environ;

/* ---- where the servers are ------------------------------------------------ */

static char everything[4096];
static int  have_node = -1;

static int on_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[4096];

	while (path && *path) {
		size_t n = strcspn(path, ":");
		snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, prog);
		if (access(buf, X_OK) == 0)
			return 1;
		path += n + (path[n] == ':');
	}
	return 0;
}

/* Is server-everything runnable here?  Says so loudly, once, when not. */
static int node_ready(void)
{
	if (have_node < 0) {
		const char *root = getenv("TOOLGATE_ROOT");
		snprintf(everything, sizeof everything, "%s/%s", root && *root ? root : ".",
		         EVERYTHING);
		have_node = on_path("node") && access(everything, R_OK) == 0;
		if (!have_node)
			fprintf(stderr,
			        "\n*** SKIPPED: node or @modelcontextprotocol/server-everything not "
			        "installed (run scripts/install-node-deps); the MCP client's tests "
			        "against real servers did not run ***\n\n");
	}
	return have_node;
}

/* ---- what the handlers heard ---------------------------------------------- */

typedef struct heard {
	pthread_mutex_t mu;
	int  list_changed;
	int  log_messages;
	int  closed;
	char why[512];
	int  requests;
	char request_method[64];
	const char *answer;  /* elicitation action to give */
} heard;

static heard H = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void heard_reset(const char *answer)
{
	pthread_mutex_lock(&H.mu);
	H.list_changed = H.log_messages = H.closed = H.requests = 0;
	H.why[0] = H.request_method[0] = '\0';
	H.answer = answer;
	pthread_mutex_unlock(&H.mu);
}

static void on_notify(void *arg, const char *method, const json_t *params)
{
	pthread_mutex_lock(&H.mu);
	if (strcmp(method, "notifications/tools/list_changed") == 0)
		H.list_changed++;
	else if (strcmp(method, "notifications/message") == 0)
		H.log_messages++;
	pthread_mutex_unlock(&H.mu);
}

static int on_request(void *arg, const char *method, const json_t *params, json_t **result,
                      json_t **error)
{
	pthread_mutex_lock(&H.mu);
	H.requests++;
	snprintf(H.request_method, sizeof H.request_method, "%s", method);
	const char *answer = H.answer ? H.answer : "decline";
	pthread_mutex_unlock(&H.mu);
	if (strcmp(method, "elicitation/create") != 0) {
		*error = json_pack("{s:i,s:s}", "code", -32601, "message", "not here");
		return -1;
	}
	if (strcmp(answer, "accept") == 0)
		*result = json_pack("{s:s,s:{s:s,s:b}}", "action", "accept", "content", "name", "Ada",
		                    "check", 1);
	else
		*result = json_pack("{s:s}", "action", answer);
	return 0;
}

static void on_closed(void *arg, const char *why)
{
	pthread_mutex_lock(&H.mu);
	H.closed++;
	snprintf(H.why, sizeof H.why, "%s", why);
	pthread_mutex_unlock(&H.mu);
}

static const tgi_mcp_client_handlers handlers = {
	.notify = on_notify, .request = on_request, .closed = on_closed,
};

/* Wait up to ms for *counter (under H.mu) to reach want. */
static int wait_heard(const int *counter, int want, int ms)
{
	for (int waited = 0;; waited += 20) {
		pthread_mutex_lock(&H.mu);
		int n = *counter;
		pthread_mutex_unlock(&H.mu);
		if (n >= want)
			return n;
		if (waited >= ms)
			return n;
		usleep(20 * 1000);
	}
}

/* ---- progress ------------------------------------------------------------ */

typedef struct progress_log {
	int          count;
	double       last, total;
	volatile int cancel;       /* set at the first notification when cancel_at_first */
	int          cancel_at_first;
	pid_t        kill_at_first; /* SIGKILL this process at the first notification */
	tgi_mcp_client *reenter;    /* make a request from the first notification */
	int          reenter_rc;
	char         reenter_err[256];
} progress_log;

static void on_progress(void *arg, const json_t *params)
{
	progress_log *pl = arg;
	pl->count++;
	pl->last = json_number_value(json_object_get(params, "progress"));
	pl->total = json_number_value(json_object_get(params, "total"));
	if (pl->cancel_at_first)
		pl->cancel = 1;
	if (pl->kill_at_first > 0 && pl->count == 1)
		kill(pl->kill_at_first, SIGKILL);
	if (pl->reenter && pl->count == 1) {
		json_t *result, *error;
		pl->reenter_rc = tgi_mcp_client_request(pl->reenter, "ping", NULL, 5000, NULL, NULL,
		                                        NULL, &result, &error, NULL, pl->reenter_err,
		                                        sizeof pl->reenter_err);
	}
}

/* ---- helpers --------------------------------------------------------------- */

static tgi_mcp_client *open_everything_stdio(void)
{
	char *argv[] = {"node", everything, "stdio", NULL};
	tgi_mcp_client_cfg cfg = {.name = "everything", .argv = argv, .init_timeout_s = 20};
	tgi_mcp_client *c = NULL;
	char err[512] = "";

	if (tgi_mcp_client_open(&cfg, &handlers, &c, err, sizeof err) != 0)
		fail_msg("open: %s", err);
	return c;
}

/* tools/call name with args (a JSON text); returns the result (caller
 * frees) and asserts it came. */
static json_t *call_tool(tgi_mcp_client *c, const char *name, const char *args)
{
	json_t *params = json_pack("{s:s,s:o}", "name", name, "arguments",
	                           json_loads(args, 0, NULL));
	json_t *result, *error;
	char err[512] = "";

	if (tgi_mcp_client_request(c, "tools/call", params, 20000, NULL, NULL, NULL, &result,
	                           &error, NULL, err, sizeof err) != 0)
		fail_msg("tools/call %s: %s", name, err);
	assert_null(error);
	return result;
}

/* The text of content[i] of a tools/call result (borrowed). */
static const char *content_text(const json_t *result, size_t i)
{
	json_t *block = json_array_get(json_object_get(result, "content"), i);
	return json_string_value(json_object_get(block, "text"));
}

static json_t *find_tool(json_t *tools, const char *name)
{
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t)
		if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
			return t;
	return NULL;
}

static void check_echo(tgi_mcp_client *c, const char *message)
{
	json_t *args = json_pack("{s:s}", "message", message);
	char *text = json_dumps(args, 0), want[300];
	snprintf(want, sizeof want, "Echo: %s", message);
	json_t *r = call_tool(c, "echo", text);
	free(text);
	json_decref(args);
	assert_string_equal(content_text(r, 0), want);
	json_decref(r);
}

/* The whole tools list, every page. */
static json_t *list_tools(tgi_mcp_client *c)
{
	json_t *all = json_array();
	json_t *cursor = NULL;
	for (int pages = 0; pages < 50; pages++) {
		json_t *params = cursor ? json_pack("{s:O}", "cursor", cursor) : NULL;
		json_t *result, *error;
		char err[512] = "";
		if (tgi_mcp_client_request(c, "tools/list", params, 20000, NULL, NULL, NULL, &result,
		                           &error, NULL, err, sizeof err) != 0)
			fail_msg("tools/list: %s", err);
		json_array_extend(all, json_object_get(result, "tools"));
		json_decref(cursor);
		cursor = json_incref(json_object_get(result, "nextCursor"));
		json_decref(result);
		if (!json_is_string(cursor))
			break;
	}
	json_decref(cursor);
	return all;
}

static void run_progress(tgi_mcp_client *c, int reenter)
{
	progress_log pl = {.reenter = reenter ? c : NULL};
	json_t *params = json_pack("{s:s,s:{s:f,s:i}}", "name", "trigger-long-running-operation",
	                           "arguments", "duration", 0.5, "steps", 5);
	json_t *result, *error;
	char err[512] = "";

	assert_int_equal(tgi_mcp_client_request(c, "tools/call", params, 20000, NULL, on_progress,
	                                        &pl, &result, &error, NULL, err, sizeof err),
	                 0);
	assert_int_equal(pl.count, 5);
	assert_true(pl.last == 5 && pl.total == 5);
	assert_non_null(strstr(content_text(result, 0), "Long running operation completed"));
	json_decref(result);
	if (reenter) {
		/* the stdio reader runs the callback: a request from it would wait
		 * on itself, so it fails at once */
		assert_int_equal(pl.reenter_rc, -1);
		assert_string_equal(pl.reenter_err, "a request to the server \"everything\" cannot be "
		                                    "made from a handler; make it from another thread");
	}
}

/* A long call cancelled at its first progress: ends fast, cancelled = 1. */
static void run_cancel(tgi_mcp_client *c)
{
	progress_log pl = {.cancel_at_first = 1};
	json_t *params = json_pack("{s:s,s:{s:i,s:i}}", "name", "trigger-long-running-operation",
	                           "arguments", "duration", 20, "steps", 200);
	json_t *result, *error;
	char err[512] = "";
	int cancelled = 0;
	double t0 = tgi_now_ms();

	assert_int_equal(tgi_mcp_client_request(c, "tools/call", params, 30000, &pl.cancel,
	                                        on_progress, &pl, &result, &error, &cancelled, err,
	                                        sizeof err),
	                 -1);
	assert_true(tgi_now_ms() - t0 < 3000);
	assert_int_equal(cancelled, 1);
	assert_null(result);
	assert_null(error);
	assert_non_null(strstr(err, "was cancelled"));
	assert_true(tgi_mcp_client_alive(c));
	check_echo(c, "after cancel");
}

static void run_elicitation(tgi_mcp_client *c, const char *answer, const char *want)
{
	heard_reset(answer);
	json_t *r = call_tool(c, "trigger-elicitation-request", "{}");
	assert_int_equal(H.requests, 1);
	assert_string_equal(H.request_method, "elicitation/create");
	json_t *content = json_object_get(r, "content");
	int found = 0;
	for (size_t i = 0; i < json_array_size(content); i++)
		if (content_text(r, i) && strstr(content_text(r, i), want))
			found = 1;
	if (!found)
		fail_msg("no \"%s\" in %s", want, json_dumps(r, 0));
	json_decref(r);
}

/* ---- stdio against server-everything ----------------------------------------- */

static tgi_mcp_client *shared;

static int stdio_setup(void **state)
{
	heard_reset("accept");
	if (node_ready())
		shared = open_everything_stdio();
	return 0;
}

static int stdio_teardown(void **state)
{
	/* server-everything outlives its stdin closing, and close() would give
	 * it 2 s before SIGTERM: the stubborn-child test covers that path */
	if (shared)
		kill(tgi_mcp_client_pid(shared), SIGTERM);
	tgi_mcp_client_close(shared);
	shared = NULL;
	return 0;
}

#define NEED_NODE()            \
	do {                       \
		if (!node_ready())     \
			skip();            \
	} while (0)

static void test_stdio_initialize(void **state)
{
	NEED_NODE();
	const json_t *info = tgi_mcp_client_server_info(shared);
	assert_string_equal(json_string_value(json_object_get(info, "name")),
	                    "mcp-servers/everything");
	assert_true(json_is_object(json_object_get(tgi_mcp_client_capabilities(shared), "tools")));
	assert_string_equal(tgi_mcp_client_version(shared), "2025-11-25");
	assert_true(tgi_mcp_client_pid(shared) > 0);
	assert_true(tgi_mcp_client_alive(shared));
	/* the tools it registers once it knows our capabilities are announced */
	assert_true(wait_heard(&H.list_changed, 1, 3000) >= 1);
}

static void test_stdio_tools_list(void **state)
{
	NEED_NODE();
	json_t *tools = list_tools(shared);
	assert_true(json_array_size(tools) >= 10);
	json_t *echo = find_tool(tools, "echo");
	assert_non_null(echo);
	assert_true(json_is_object(json_object_get(echo, "inputSchema")));
	assert_non_null(find_tool(tools, "trigger-long-running-operation"));
	/* offered because initialize declared elicitation */
	assert_non_null(find_tool(tools, "trigger-elicitation-request"));
	json_decref(tools);
}

static void test_stdio_echo(void **state)
{
	NEED_NODE();
	check_echo(shared, "hello");
	check_echo(shared, "h\u00e9llo \"quoted\"\n\ttabbed");
}

static void test_stdio_progress(void **state)
{
	NEED_NODE();
	run_progress(shared, 1);
}

static void test_stdio_cancel(void **state)
{
	NEED_NODE();
	run_cancel(shared);
}

static void test_stdio_timeout(void **state)
{
	NEED_NODE();
	json_t *params = json_pack("{s:s,s:{s:i,s:i}}", "name", "trigger-long-running-operation",
	                           "arguments", "duration", 20, "steps", 2);
	json_t *result, *error;
	char err[512] = "";
	int cancelled = -1;
	double t0 = tgi_now_ms();

	assert_int_equal(tgi_mcp_client_request(shared, "tools/call", params, 400, NULL, NULL, NULL,
	                                        &result, &error, &cancelled, err, sizeof err),
	                 -1);
	double took = tgi_now_ms() - t0;
	assert_true(took >= 390 && took < 2000);
	assert_int_equal(cancelled, 0);
	assert_null(result);
	assert_null(error);
	assert_string_equal(err, "the server \"everything\" did not answer \"tools/call\" within "
	                         "400 ms");
	check_echo(shared, "after timeout");
}

static void test_stdio_unknown_method(void **state)
{
	NEED_NODE();
	json_t *result, *error;
	char err[512] = "";

	assert_int_equal(tgi_mcp_client_request(shared, "server/discover", NULL, 5000, NULL, NULL,
	                                        NULL, &result, &error, NULL, err, sizeof err),
	                 -1);
	assert_null(result);
	assert_non_null(error);
	assert_int_equal(json_integer_value(json_object_get(error, "code")), -32601);
	assert_non_null(strstr(err, "error -32601"));
	json_decref(error);
}

static void test_stdio_params_not_object(void **state)
{
	NEED_NODE();
	json_t *result, *error;
	char err[512] = "";

	assert_int_equal(tgi_mcp_client_request(shared, "tools/list", json_array(), 5000, NULL,
	                                        NULL, NULL, &result, &error, NULL, err, sizeof err),
	                 -1);
	assert_null(error);
	assert_string_equal(err, "the parameters of \"tools/list\" must be an object");
}

static void test_stdio_elicitation(void **state)
{
	NEED_NODE();
	run_elicitation(shared, "accept", "Name: Ada");
}

static void test_stdio_log_notifications(void **state)
{
	NEED_NODE();
	heard_reset(NULL);
	json_decref(call_tool(shared, "toggle-simulated-logging", "{}"));
	assert_true(wait_heard(&H.log_messages, 1, 3000) >= 1);
	json_decref(call_tool(shared, "toggle-simulated-logging", "{}"));
}

/* Several threads at once: each answer reaches its own request. */
static void *echo_many(void *arg)
{
	char msg[64];
	for (int i = 0; i < 10; i++) {
		snprintf(msg, sizeof msg, "thread %d call %d", *(int *)arg, i);
		check_echo(shared, msg);
	}
	return NULL;
}

static void test_stdio_concurrent(void **state)
{
	NEED_NODE();
	pthread_t t[4];
	int ids[4];
	for (int i = 0; i < 4; i++) {
		ids[i] = i;
		assert_int_equal(pthread_create(&t[i], NULL, echo_many, &ids[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

/* ---- a server's life and death ------------------------------------------------ */

/* The child killed while a request waits: the request fails with a
 * sentence, closed is called once, and nothing more is sent. */
static void test_killed_child(void **state)
{
	NEED_NODE();
	heard_reset(NULL);
	tgi_mcp_client *c = open_everything_stdio();
	progress_log pl = {.kill_at_first = tgi_mcp_client_pid(c)};
	json_t *params = json_pack("{s:s,s:{s:i,s:i}}", "name", "trigger-long-running-operation",
	                           "arguments", "duration", 20, "steps", 200);
	json_t *result, *error;
	char err[512] = "";
	double t0 = tgi_now_ms();

	assert_int_equal(tgi_mcp_client_request(c, "tools/call", params, 30000, NULL, on_progress,
	                                        &pl, &result, &error, NULL, err, sizeof err),
	                 -1);
	assert_true(tgi_now_ms() - t0 < 5000);
	assert_null(error);
	assert_string_equal(err, "the server \"everything\" closed the connection (it was killed "
	                         "by signal 9)");
	assert_int_equal(wait_heard(&H.closed, 1, 2000), 1);
	assert_string_equal(H.why, err);
	assert_false(tgi_mcp_client_alive(c));

	/* later requests fail at once, with the same sentence */
	err[0] = '\0';
	assert_int_equal(tgi_mcp_client_request(c, "ping", NULL, 5000, NULL, NULL, NULL, &result,
	                                        &error, NULL, err, sizeof err),
	                 -1);
	assert_string_equal(err, H.why);
	assert_int_equal(tgi_mcp_client_notify(c, "notifications/roots/list_changed", NULL), -1);
	tgi_mcp_client_close(c);
	assert_int_equal(H.closed, 1);
}

#define INIT_REPLY(version)                                                                 \
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"" version "\","       \
	"\"capabilities\":{},\"serverInfo\":{\"name\":\"fake\",\"version\":\"1\"}}}"

static int open_sh(const char *script, int init_timeout_s, size_t max_message,
                   tgi_mcp_client **c, char *err, size_t errlen)
{
	char *argv[] = {"sh", "-c", (char *)script, NULL};
	tgi_mcp_client_cfg cfg = {.name = "fake", .argv = argv, .init_timeout_s = init_timeout_s,
	                          .max_message = max_message};
	return tgi_mcp_client_open(&cfg, &handlers, c, err, errlen);
}

/* What a child wrote on stderr, as the client passed it on. */
static struct {
	pthread_mutex_t mu;
	char            text[4096];
	size_t          len;
} err_heard = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void on_stderr(void *arg, const char *data, size_t n)
{
	pthread_mutex_lock(&err_heard.mu);
	if (n > sizeof err_heard.text - 1 - err_heard.len)
		n = sizeof err_heard.text - 1 - err_heard.len;
	memcpy(err_heard.text + err_heard.len, data, n);
	err_heard.len += n;
	err_heard.text[err_heard.len] = '\0';
	pthread_mutex_unlock(&err_heard.mu);
}

static int open_sh_stderr(const char *script, tgi_mcp_client **c, char *err, size_t errlen)
{
	char *argv[] = {"sh", "-c", (char *)script, NULL};
	tgi_mcp_client_cfg cfg = {.name = "fake", .argv = argv, .init_timeout_s = 10,
	                          .stderr_data = on_stderr, .stderr_arg = NULL};
	pthread_mutex_lock(&err_heard.mu);
	err_heard.len = 0;
	err_heard.text[0] = '\0';
	pthread_mutex_unlock(&err_heard.mu);
	return tgi_mcp_client_open(&cfg, &handlers, c, err, errlen);
}

/* Does what the child wrote on stderr hold want, within ms? */
static int err_heard_has(const char *want, int ms)
{
	for (int waited = 0;; waited += 20) {
		pthread_mutex_lock(&err_heard.mu);
		int has = strstr(err_heard.text, want) != NULL;
		pthread_mutex_unlock(&err_heard.mu);
		if (has || waited >= ms)
			return has;
		usleep(20 * 1000);
	}
}

/* With stderr_data, the child's stderr is passed on (before and after
 * initialize), not written to ours. */
static void test_stderr_passed_on(void **state)
{
	tgi_mcp_client *c = NULL;
	char err[512] = "";

	assert_int_equal(open_sh_stderr("echo early >&2; read l; printf '%s\\n' '"
	                                INIT_REPLY("2025-11-25") "'; read l; echo late >&2; "
	                                "cat >/dev/null", &c, err, sizeof err), 0);
	assert_true(err_heard_has("early\nlate\n", 5000));
	tgi_mcp_client_close(c);
}

/* A child that writes why it fails and exits: its last words are passed
 * on before open() returns. */
static void test_stderr_last_words(void **state)
{
	tgi_mcp_client *c = NULL;
	char err[512] = "";

	assert_int_equal(open_sh_stderr("echo 'no module named mcp' >&2; exit 3", &c, err,
	                                sizeof err), -1);
	assert_string_equal(err, "the server \"fake\" closed the connection (it exited with "
	                         "status 3)");
	pthread_mutex_lock(&err_heard.mu);
	assert_string_equal(err_heard.text, "no module named mcp\n");
	pthread_mutex_unlock(&err_heard.mu);
}

/*
 * A server that ignores both its stdin closing and SIGTERM is still gone,
 * with everything in its process group, within about 4 s.  Those seconds
 * are spent on a thread while the other tests run: _begin opens it and
 * starts the close, _end (the last test) checks how it went.
 */
static struct {
	pthread_t thread;
	int       started;
	pid_t     pid;
	double    took;
	tgi_mcp_client *c;
} stubborn;

static void *close_stubborn(void *arg)
{
	double t0 = tgi_now_ms();
	tgi_mcp_client_close(stubborn.c);
	stubborn.took = tgi_now_ms() - t0;
	return NULL;
}

static void test_close_stubborn_child_begin(void **state)
{
	char err[512] = "";

	assert_int_equal(open_sh("trap '' TERM; read l; printf '%s\\n' '" INIT_REPLY("2025-06-18")
	                         "'; sleep 100",
	                         10, 0, &stubborn.c, err, sizeof err),
	                 0);
	assert_string_equal(tgi_mcp_client_version(stubborn.c), "2025-06-18");
	stubborn.pid = tgi_mcp_client_pid(stubborn.c);
	assert_int_equal(pthread_create(&stubborn.thread, NULL, close_stubborn, NULL), 0);
	stubborn.started = 1;
}

static void test_close_stubborn_child_end(void **state)
{
	if (!stubborn.started)
		fail_msg("the stubborn child was not started");
	pthread_join(stubborn.thread, NULL);
	stubborn.started = 0;
	assert_true(stubborn.took >= 3500 && stubborn.took < 5500);
	assert_int_equal(kill(stubborn.pid, 0), -1); /* reaped */
	assert_int_equal(errno, ESRCH);
	/* and its sleep is dead too (a zombie until init reaps it) */
	for (int waited = 0; kill(-stubborn.pid, 0) == 0 && waited < 2000; waited += 20)
		usleep(20 * 1000);
	assert_int_equal(kill(-stubborn.pid, 0), -1);
}

static void test_command_not_found(void **state)
{
	char *argv[] = {"toolgate-no-such-server", "--stdio", NULL};
	tgi_mcp_client_cfg cfg = {.name = "ghost", .argv = argv};
	tgi_mcp_client *c = (tgi_mcp_client *)&cfg;
	char err[512] = "";

	assert_int_equal(tgi_mcp_client_open(&cfg, &handlers, &c, err, sizeof err), -1);
	assert_null(c);
	assert_string_equal(err, "cannot start the server \"ghost\": \"toolgate-no-such-server\" "
	                         "was not found");

	char *argv2[] = {"sh", NULL};
	tgi_mcp_client_cfg cfg2 = {.name = "ghost", .argv = argv2, .cwd = "/nonexistent-dir"};
	assert_int_equal(tgi_mcp_client_open(&cfg2, &handlers, &c, err, sizeof err), -1);
	assert_string_equal(err, "cannot start the server \"ghost\": its directory "
	                         "\"/nonexistent-dir\" cannot be entered (no such file or "
	                         "directory)");
}

/* The sandbox's hooks (client.h): child_setup runs in the child before
 * exec (a failure is the start's failure, said), started in the caller
 * once the exec succeeded (a failure kills the child and is the open's). */
static int setup_fails(void *arg)
{
	(void)arg;
	return -EPERM;
}

static int setup_marks(void *arg)
{
	/* async-signal-safe: an environment variable of the child is not; an
	 * fd is (the server then says it was marked) */
	return dup2(*(int *)arg, 9) == 9 ? 0 : -errno;
}

static pid_t started_pid;

static int started_refuses(void *arg, pid_t pid, char *err, size_t errlen)
{
	(void)arg;
	started_pid = pid;
	snprintf(err, errlen, "the proxy refused");
	return -1;
}

static void test_sandbox_hooks(void **state)
{
	char *argv[] = {"sh", "-c", "read l; printf '%s\\n' '" INIT_REPLY("2025-11-25") "'; "
	                "cat > /dev/null", NULL};
	tgi_mcp_client_cfg cfg = {.name = "boxed", .argv = argv, .child_setup = setup_fails};
	tgi_mcp_client *c = NULL;
	char err[512] = "";

	assert_int_equal(tgi_mcp_client_open(&cfg, &handlers, &c, err, sizeof err), -1);
	assert_null(c);
	assert_string_equal(err, "cannot start the server \"boxed\": its sandbox could not be "
	                         "entered (operation not permitted)");

	cfg.child_setup = NULL;
	cfg.started = started_refuses;
	started_pid = 0;
	assert_int_equal(tgi_mcp_client_open(&cfg, &handlers, &c, err, sizeof err), -1);
	assert_null(c);
	assert_string_equal(err, "cannot start the server \"boxed\": the proxy refused");
	assert_true(started_pid > 0);
	assert_int_equal(kill(started_pid, 0), -1);   /* killed and reaped */

	/* both run, in order, and the server starts */
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	char *argv2[] = {"sh", "-c", "echo marked >&9; read l; printf '%s\\n' '"
	                 INIT_REPLY("2025-11-25") "'; cat > /dev/null", NULL};
	tgi_mcp_client_cfg ok = {.name = "boxed", .argv = argv2, .child_setup = setup_marks,
	                         .child_arg = &fds[1]};
	assert_int_equal(tgi_mcp_client_open(&ok, &handlers, &c, err, sizeof err), 0);
	close(fds[1]);
	char buf[16] = "";
	assert_true(read(fds[0], buf, sizeof buf - 1) > 0);
	assert_string_equal(buf, "marked\n");
	close(fds[0]);
	tgi_mcp_client_close(c);
}

static void test_bad_config(void **state)
{
	tgi_mcp_client_cfg none = {.name = "x"};
	tgi_mcp_client *c = NULL;
	char err[512] = "";

	assert_int_equal(tgi_mcp_client_open(&none, NULL, &c, err, sizeof err), -1);
	assert_string_equal(err, "the server \"x\" needs either a command or a url");

	tgi_mcp_client_cfg ftp = {.name = "x", .url = "ftp://127.0.0.1/mcp"};
	assert_int_equal(tgi_mcp_client_open(&ftp, NULL, &c, err, sizeof err), -1);
	assert_string_equal(err, "the url \"ftp://127.0.0.1/mcp\" of the server \"x\" is not http "
	                         "or https");
	assert_null(c);

	const char *bad[] = {"Authorization: Bearer x\r\nX-Injected: 1"};
	tgi_mcp_client_cfg inject = {.name = "x", .url = "http://127.0.0.1:1/mcp", .headers = bad,
	                             .nheaders = 1};
	assert_int_equal(tgi_mcp_client_open(&inject, NULL, &c, err, sizeof err), -1);
	assert_string_equal(err, "header 1 of the server \"x\" is not one \"Name: value\" line");
	assert_null(c);
	tgi_mcp_client_close(NULL);
}

static void test_server_exits_early(void **state)
{
	tgi_mcp_client *c = NULL;
	char err[512] = "";

	assert_int_equal(open_sh("exit 3", 10, 0, &c, err, sizeof err), -1);
	assert_null(c);
	assert_string_equal(err, "the server \"fake\" closed the connection (it exited with "
	                         "status 3)");
}

static void test_unknown_protocol(void **state)
{
	tgi_mcp_client *c = NULL;
	char err[512] = "";

	assert_int_equal(open_sh("read l; printf '%s\\n' '" INIT_REPLY("1999-01-01") "'; cat "
	                         ">/dev/null",
	                         10, 0, &c, err, sizeof err),
	                 -1);
	assert_string_equal(err, "the server \"fake\" speaks protocol 1999-01-01, which toolgate "
	                         "does not");
}

static void test_refused_initialize(void **state)
{
	tgi_mcp_client *c = NULL;
	char err[512] = "";

	assert_int_equal(open_sh("read l; echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":"
	                         "-32602,\"message\":\"no thanks\"}}'; cat >/dev/null",
	                         10, 0, &c, err, sizeof err),
	                 -1);
	assert_string_equal(err, "the server \"fake\" refused to initialize: no thanks");
}

static void test_initialize_timeout(void **state)
{
	tgi_mcp_client *c = NULL;
	char err[512] = "";
	double t0 = tgi_now_ms();

	/* reads, never answers, and leaves when its stdin closes */
	assert_int_equal(open_sh("cat >/dev/null", 1, 0, &c, err, sizeof err), -1);
	assert_true(tgi_now_ms() - t0 < 2500);
	assert_string_equal(err, "the server \"fake\" did not answer \"initialize\" within 1 s");
}

/* A line over max_message is dropped and the stream goes on; junk that
 * is not JSON-RPC is dropped too. */
static void test_overlong_line(void **state)
{
	tgi_mcp_client *c = NULL;
	json_t *result, *error;
	char err[512] = "";

	assert_int_equal(open_sh("read l; printf '%s\\n' '" INIT_REPLY("2025-11-25") "'; read l; "
	                         "read l; head -c 100000 /dev/zero | tr '\\0' x; echo; "
	                         "echo 'not json'; echo '[1,2]'; "
	                         "echo '{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"ok\":true}}'; "
	                         "cat >/dev/null",
	                         10, 4096, &c, err, sizeof err),
	                 0);
	assert_int_equal(tgi_mcp_client_request(c, "tools/list", NULL, 5000, NULL, NULL, NULL,
	                                        &result, &error, NULL, err, sizeof err),
	                 0);
	assert_true(json_is_true(json_object_get(result, "ok")));
	json_decref(result);
	tgi_mcp_client_close(c);
}

/* The server's own requests: ping is answered here with {}, others by
 * handlers.request (an error object passes through as given).  The fake
 * server echoes the three lines it reads back as the result of ours. */
static void test_server_requests_answered(void **state)
{
	tgi_mcp_client *c = NULL;
	json_t *result, *error;
	char err[512] = "";
	int pong = 0, refused = 0;

	assert_int_equal(open_sh("read l; printf '%s\\n' '" INIT_REPLY("2025-11-25") "'; read l; "
	                         "echo '{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"ping\"}'; "
	                         "echo '{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"roots/list\"}'; "
	                         "read a; read b; read c; "
	                         "printf '{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"lines\":"
	                         "[%s,%s,%s]}}\\n' \"$a\" \"$b\" \"$c\"; cat >/dev/null",
	                         10, 0, &c, err, sizeof err),
	                 0);
	assert_int_equal(tgi_mcp_client_request(c, "tools/list", NULL, 5000, NULL, NULL, NULL,
	                                        &result, &error, NULL, err, sizeof err),
	                 0);
	json_t *lines = json_object_get(result, "lines");
	assert_int_equal(json_array_size(lines), 3);
	for (size_t i = 0; i < 3; i++) {
		json_t *m = json_array_get(lines, i), *id = json_object_get(m, "id");
		if (json_is_string(id) && strcmp(json_string_value(id), "s1") == 0)
			pong = json_is_object(json_object_get(m, "result")) &&
			       json_object_size(json_object_get(m, "result")) == 0;
		else if (json_integer_value(id) == 7)
			refused = json_integer_value(json_object_get(json_object_get(m, "error"),
			                                             "code")) == -32601;
		else
			assert_string_equal(json_string_value(json_object_get(m, "method")), "tools/list");
	}
	assert_true(pong);
	assert_true(refused);
	json_decref(result);
	tgi_mcp_client_close(c);
}

/* ---- the cap on the server's own requests ---------------------------------------- */

/* handlers.request that blocks until the test lets it go, counting how
 * many run at once (bounded: a failed test does not hang on them). */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	int running, peak, calls, released, bad_method;
} blocked = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static int on_request_blocking(void *arg, const char *method, const json_t *params,
                               json_t **result, json_t **error)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&blocked.mu);
	blocked.calls++;
	if (strcmp(method, "elicitation/create") != 0)
		blocked.bad_method++;
	if (++blocked.running > blocked.peak)
		blocked.peak = blocked.running;
	pthread_cond_broadcast(&blocked.cv);
	while (!blocked.released &&
	       pthread_cond_timedwait(&blocked.cv, &blocked.mu, &until) != ETIMEDOUT)
		;
	blocked.running--;
	pthread_mutex_unlock(&blocked.mu);
	*result = json_pack("{s:s}", "action", "decline");
	return 0;
}

/* The client's replies (messages with an id and no method) among the
 * complete lines of path, once there are at least want of them (or 3 s
 * have passed): a new array. */
static json_t *replies_in(const char *path, size_t want)
{
	for (int waited = 0;; waited += 10) {
		json_t *replies = json_array();
		FILE *f = fopen(path, "r");
		char line[4096];

		while (f && fgets(line, sizeof line, f)) {
			size_t n = strlen(line);
			json_t *m;
			if (n == 0 || line[n - 1] != '\n')
				break; /* still being written */
			m = json_loads(line, 0, NULL);
			if (json_is_object(m) && json_object_get(m, "id") &&
			    !json_object_get(m, "method"))
				json_array_append(replies, m);
			json_decref(m);
		}
		if (f)
			fclose(f);
		if (json_array_size(replies) >= want || waited >= 3000)
			return replies;
		json_decref(replies);
		usleep(10 * 1000);
	}
}

/* 20 requests at once from the server and then a ping: 16 reach
 * handlers.request together, the 4 past them are answered -32603 at
 * once, the ping still gets {} (all while the 16 block), and the 16
 * answers follow when they are let go.  The fake server copies what the
 * client writes to it into a file. */
static void test_server_requests_capped(void **state)
{
	tgi_mcp_client_handlers h = {.request = on_request_blocking, .closed = on_closed};
	char dir[] = "/tmp/tg-cap.XXXXXX", path[64], script[1024], err[512] = "";
	tgi_mcp_client *c = NULL;
	char *argv[] = {"sh", "-c", script, NULL};
	tgi_mcp_client_cfg cfg = {.name = "fake", .argv = argv, .init_timeout_s = 10};
	int seen[21] = {0};
	json_t *replies, *m;
	size_t i;

	heard_reset(NULL);
	pthread_mutex_lock(&blocked.mu);
	blocked.running = blocked.peak = blocked.calls = blocked.released = 0;
	blocked.bad_method = 0;
	pthread_mutex_unlock(&blocked.mu);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/replies", dir);
	snprintf(script, sizeof script,
	         "read l; printf '%%s\\n' '" INIT_REPLY("2025-11-25") "'; read l; i=1; "
	         "while [ $i -le 20 ]; do printf '{\"jsonrpc\":\"2.0\",\"id\":%%d,\"method\":"
	         "\"elicitation/create\",\"params\":{\"message\":\"m%%d\",\"requestedSchema\":"
	         "{\"type\":\"object\",\"properties\":{}}}}\\n' $i $i; i=$((i+1)); done; "
	         "echo '{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"ping\"}'; exec cat >'%s'",
	         path);
	assert_int_equal(tgi_mcp_client_open(&cfg, &h, &c, err, sizeof err), 0);

	/* the 16 handlers run together */
	pthread_mutex_lock(&blocked.mu);
	for (int waited = 0; blocked.calls < 16 && waited < 3000; waited += 10) {
		pthread_mutex_unlock(&blocked.mu);
		usleep(10 * 1000);
		pthread_mutex_lock(&blocked.mu);
	}
	pthread_mutex_unlock(&blocked.mu);

	/* while they block: 4 refusals and the pong, nothing else */
	replies = replies_in(path, 5);
	assert_int_equal(json_array_size(replies), 5);
	json_array_foreach(replies, i, m) {
		json_int_t id = json_integer_value(json_object_get(m, "id"));
		json_t *error = json_object_get(m, "error"), *result = json_object_get(m, "result");
		assert_true(id >= 17 && id <= 21);
		assert_int_equal(seen[id - 1]++, 0);
		if (id == 21) {
			assert_null(error);
			assert_true(json_is_object(result) && json_object_size(result) == 0);
		} else {
			assert_null(result);
			assert_int_equal(json_integer_value(json_object_get(error, "code")), -32603);
			assert_string_equal(json_string_value(json_object_get(error, "message")),
			                    "too many requests from this server at once");
		}
	}
	json_decref(replies);
	pthread_mutex_lock(&blocked.mu);
	int calls = blocked.calls, running = blocked.running, peak = blocked.peak;
	int bad_method = blocked.bad_method;
	pthread_mutex_unlock(&blocked.mu);
	assert_int_equal(calls, 16);
	assert_int_equal(running, 16);
	assert_int_equal(peak, 16);
	assert_int_equal(bad_method, 0);

	/* let them go: their 16 answers follow */
	pthread_mutex_lock(&blocked.mu);
	blocked.released = 1;
	pthread_cond_broadcast(&blocked.cv);
	pthread_mutex_unlock(&blocked.mu);
	replies = replies_in(path, 21);
	assert_int_equal(json_array_size(replies), 21);
	json_array_foreach(replies, i, m) {
		json_int_t id = json_integer_value(json_object_get(m, "id"));
		assert_true(id >= 1 && id <= 21);
		if (id <= 16) {
			assert_int_equal(seen[id - 1]++, 0);
			assert_null(json_object_get(m, "error"));
			assert_string_equal(json_string_value(json_object_get(
			                        json_object_get(m, "result"), "action")),
			                    "decline");
		}
	}
	json_decref(replies);
	for (int k = 0; k < 21; k++)
		assert_int_equal(seen[k], 1);

	tgi_mcp_client_close(c);
	pthread_mutex_lock(&blocked.mu);
	assert_int_equal(blocked.running, 0);
	assert_int_equal(blocked.calls, 16);
	pthread_mutex_unlock(&blocked.mu);
	assert_int_equal(H.closed, 0);
	unlink(path);
	rmdir(dir);
}

/* ---- Streamable HTTP against server-everything ------------------------------------ */

static pid_t http_pid;
static int   http_port;
static char  http_url[128];

static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static int port_open(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
	close(fd);
	return ok;
}

static void http_server_kill(void)
{
	if (http_pid > 0) {
		kill(-http_pid, SIGKILL);
		waitpid(http_pid, NULL, 0);
		http_pid = 0;
	}
}

static int http_setup(void **state)
{
	char port_env[32];
	size_t n = 0;

	if (!node_ready())
		return 0;
	http_port = free_port();
	snprintf(port_env, sizeof port_env, "PORT=%d", http_port);
	snprintf(http_url, sizeof http_url, "http://127.0.0.1:%d/mcp", http_port);
	while (environ[n])
		n++;
	char **envp = calloc(n + 2, sizeof *envp);
	for (size_t i = 0; i < n; i++)
		envp[i] = environ[i];
	envp[n] = port_env;

	http_pid = fork();
	if (http_pid == 0) {
		char *argv[] = {"node", everything, "streamableHttp", NULL};
		int devnull = open("/dev/null", O_RDWR);
		setpgid(0, 0);
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execvpe("node", argv, envp);
		_exit(127);
	}
	free(envp);
	for (int waited = 0; !port_open(http_port); waited += 50) {
		if (waited > 20000) {
			http_server_kill();
			fprintf(stderr, "server-everything did not listen on port %d\n", http_port);
			return -1;
		}
		usleep(50 * 1000);
	}
	return 0;
}

static int http_teardown(void **state)
{
	http_server_kill();
	return 0;
}

static tgi_mcp_client *open_http(void)
{
	const char *headers[] = {"X-Test: toolgate"};
	tgi_mcp_client_cfg cfg = {.name = "web", .url = http_url, .headers = headers,
	                          .nheaders = 1, .init_timeout_s = 20};
	tgi_mcp_client *c = NULL;
	char err[512] = "";

	if (tgi_mcp_client_open(&cfg, &handlers, &c, err, sizeof err) != 0)
		fail_msg("open %s: %s", http_url, err);
	return c;
}

static void test_http_session(void **state)
{
	NEED_NODE();
	heard_reset(NULL);
	tgi_mcp_client *c = open_http();
	const json_t *info = tgi_mcp_client_server_info(c);
	assert_string_equal(json_string_value(json_object_get(info, "name")),
	                    "mcp-servers/everything");
	assert_string_equal(tgi_mcp_client_version(c), "2025-11-25");
	assert_int_equal(tgi_mcp_client_pid(c), 0);
	assert_true(tgi_mcp_client_alive(c));

	/* every later request needs the session id the server gave */
	json_t *tools = list_tools(c);
	assert_non_null(find_tool(tools, "echo"));
	assert_non_null(find_tool(tools, "trigger-elicitation-request"));
	json_decref(tools);
	check_echo(c, "over http");

	/* list_changed arrives on the GET stream */
	assert_true(wait_heard(&H.list_changed, 1, 3000) >= 1);
	tgi_mcp_client_close(c);
	assert_int_equal(H.closed, 0);
}

static void test_http_progress_cancel_elicitation(void **state)
{
	NEED_NODE();
	tgi_mcp_client *c = open_http();
	run_progress(c, 0);
	run_cancel(c);
	run_elicitation(c, "decline", "declined");

	json_t *result, *error;
	char err[512] = "";
	assert_int_equal(tgi_mcp_client_request(c, "server/discover", NULL, 5000, NULL, NULL, NULL,
	                                        &result, &error, NULL, err, sizeof err),
	                 -1);
	assert_int_equal(json_integer_value(json_object_get(error, "code")), -32601);
	json_decref(error);
	tgi_mcp_client_close(c);
}

static void test_http_unreachable(void **state)
{
	tgi_mcp_client_cfg cfg = {.name = "nobody", .url = "http://127.0.0.1:1/mcp",
	                          .init_timeout_s = 5};
	tgi_mcp_client *c = NULL;
	char err[512] = "";

	assert_int_equal(tgi_mcp_client_open(&cfg, &handlers, &c, err, sizeof err), -1);
	assert_null(c);
	const char *want = "the server \"nobody\" at http://127.0.0.1:1/mcp cannot be reached: ";
	if (strncmp(err, want, strlen(want)) != 0)
		fail_msg("%s", err);
}

/* The server goes away: the next request says so, and closed is heard once. */
static void test_http_server_gone(void **state)
{
	NEED_NODE();
	heard_reset(NULL);
	tgi_mcp_client *c = open_http();
	json_t *result, *error;
	char err[512] = "";

	http_server_kill();
	assert_int_equal(tgi_mcp_client_request(c, "tools/list", NULL, 5000, NULL, NULL, NULL,
	                                        &result, &error, NULL, err, sizeof err),
	                 -1);
	assert_null(error);
	assert_non_null(strstr(err, "cannot be reached"));
	assert_int_equal(wait_heard(&H.closed, 1, 2000), 1);
	assert_false(tgi_mcp_client_alive(c));
	tgi_mcp_client_close(c);
	assert_int_equal(H.closed, 1);
}

/* ---- libcurl: loaded by the first HTTP open, and only then ------------------ */

/* Does this process map a file whose path holds name? */
static int mapped(const char *name)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int yes = 0;

	while (f && !yes && fgets(line, sizeof line, f))
		yes = strstr(line, name) != NULL;
	if (f)
		fclose(f);
	return yes;
}

#define CHILD_CHECK(cond, ...)                                                      \
	do {                                                                            \
		if (!(cond)) {                                                              \
			fprintf(stderr, "curl child: " __VA_ARGS__);                            \
			fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__);                      \
			return 1;                                                               \
		}                                                                           \
	} while (0)

#define NO_CURL "Streamable HTTP needs libcurl (Debian package libcurl4): "

/* A stdio server opens and closes: 0, or -1 with err. */
static int stdio_round_trip(char *err, size_t errlen)
{
	tgi_mcp_client *c = NULL;
	if (open_sh("read l; printf '%s\\n' '" INIT_REPLY("2025-11-25") "'; cat >/dev/null", 10,
	            0, &c, err, errlen) < 0)
		return -1;
	tgi_mcp_client_close(c);
	return 0;
}

/*
 * The re-executed program.  want "": libcurl is the real one; else the
 * dynamic loader's complaint about the libcurl that LD_LIBRARY_PATH puts
 * first must hold want.  Returns the exit status.
 */
static int curl_child(const char *want)
{
	tgi_mcp_client_cfg cfg = {.name = "web", .url = "http://127.0.0.1:1/mcp",
	                          .init_timeout_s = 5};
	tgi_mcp_client *c = NULL;
	char err[512] = "", again[512] = "";

	/* a gate with stdio servers only never loads libcurl */
	CHILD_CHECK(stdio_round_trip(err, sizeof err) == 0, "stdio open: %s", err);
	CHILD_CHECK(!mapped("libcurl"), "libcurl is mapped before any HTTP open");

	CHILD_CHECK(tgi_mcp_client_open(&cfg, &handlers, &c, err, sizeof err) == -1 && !c,
	            "the HTTP open did not fail");
	if (!*want) {
		const char *unreachable =
		    "the server \"web\" at http://127.0.0.1:1/mcp cannot be reached: ";
		CHILD_CHECK(strncmp(err, unreachable, strlen(unreachable)) == 0, "got: %s", err);
		CHILD_CHECK(mapped("libcurl.so.4"), "libcurl is not mapped after an HTTP open");
		return 0;
	}
	CHILD_CHECK(strncmp(err, NO_CURL, strlen(NO_CURL)) == 0 && strstr(err, want),
	            "got: %s", err);
	/* the answer is kept: the next open says the same, without trying again */
	CHILD_CHECK(tgi_mcp_client_open(&cfg, &handlers, &c, again, sizeof again) == -1 && !c,
	            "the second HTTP open did not fail");
	CHILD_CHECK(strcmp(err, again) == 0, "the second open said: %s", again);
	/* and the rest of the client still works */
	CHILD_CHECK(stdio_round_trip(err, sizeof err) == 0, "stdio open after: %s", err);
	return 0;
}

/*
 * Run curl_child(want) in a fresh process.  fake: NULL for the real
 * libcurl; "" for an empty libcurl.so.4 found first; else the path that a
 * libcurl.so.4 found first links to.
 */
static void run_curl_child(const char *fake, const char *want)
{
	char dir[] = "/tmp/tg-curl.XXXXXX", lib[64];
	int status;
	pid_t pid;

	assert_non_null(mkdtemp(dir));
	snprintf(lib, sizeof lib, "%s/libcurl.so.4", dir);
	if (fake && *fake) {
		assert_int_equal(symlink(fake, lib), 0);
	} else if (fake) {
		int fd = open(lib, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		assert_true(fd >= 0);
		close(fd);
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (fake)
			setenv("LD_LIBRARY_PATH", dir, 1);
		execl("/proc/self/exe", "test_mcp_client", "--curl-child", want, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	unlink(lib);
	rmdir(dir);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_curl_loaded_on_first_http_open(void **state)
{
	run_curl_child(NULL, "");
}

static void test_curl_missing(void **state)
{
	run_curl_child("", "libcurl.so.4: file too short");
}

/* a libcurl.so.4 that is some other library: the first function is missing */
static void test_curl_without_its_functions(void **state)
{
	Dl_info info;
	assert_true(dladdr((void *)json_object, &info) && info.dli_fname);
	run_curl_child(info.dli_fname, "undefined symbol: curl_");
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--curl-child") == 0)
		return curl_child(argv[2]);

	const struct CMUnitTest stdio_tests[] = {
		cmocka_unit_test(test_stdio_initialize),
		cmocka_unit_test(test_stdio_tools_list),
		cmocka_unit_test(test_stdio_echo),
		cmocka_unit_test(test_stdio_progress),
		cmocka_unit_test(test_stdio_cancel),
		cmocka_unit_test(test_stdio_timeout),
		cmocka_unit_test(test_stdio_unknown_method),
		cmocka_unit_test(test_stdio_params_not_object),
		cmocka_unit_test(test_stdio_elicitation),
		cmocka_unit_test(test_stdio_log_notifications),
		cmocka_unit_test(test_stdio_concurrent),
	};
	const struct CMUnitTest life_tests[] = {
		cmocka_unit_test(test_close_stubborn_child_begin),
		cmocka_unit_test(test_killed_child),
		cmocka_unit_test(test_command_not_found),
		cmocka_unit_test(test_sandbox_hooks),
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_server_exits_early),
		cmocka_unit_test(test_stderr_passed_on),
		cmocka_unit_test(test_stderr_last_words),
		cmocka_unit_test(test_unknown_protocol),
		cmocka_unit_test(test_refused_initialize),
		cmocka_unit_test(test_initialize_timeout),
		cmocka_unit_test(test_overlong_line),
		cmocka_unit_test(test_server_requests_answered),
		cmocka_unit_test(test_server_requests_capped),
		cmocka_unit_test(test_curl_loaded_on_first_http_open),
		cmocka_unit_test(test_curl_missing),
		cmocka_unit_test(test_curl_without_its_functions),
	};
	const struct CMUnitTest http_tests[] = {
		cmocka_unit_test(test_http_session),
		cmocka_unit_test(test_http_progress_cancel_elicitation),
		cmocka_unit_test(test_http_unreachable),
		cmocka_unit_test(test_http_server_gone),
	};
	const struct CMUnitTest end_tests[] = {
		cmocka_unit_test(test_close_stubborn_child_end),
	};
	int failed = 0;

	failed += cmocka_run_group_tests_name("mcp_client_lifecycle", life_tests, NULL, NULL);
	failed += cmocka_run_group_tests_name("mcp_client_stdio", stdio_tests, stdio_setup,
	                                      stdio_teardown);
	failed += cmocka_run_group_tests_name("mcp_client_http", http_tests, http_setup,
	                                      http_teardown);
	failed += cmocka_run_group_tests_name("mcp_client_close", end_tests, NULL, NULL);
	return failed ? 1 : 0;
}
