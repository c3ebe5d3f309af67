/*
 * test_agent_http.c — the HTTP providers (src/agent/http.c) against the
 * fake model API (tests/fake_provider.c), which each test starts as a
 * child on an ephemeral port of 127.0.0.1 with the scenarios of
 * tests/data/agent/http/ (recorded answers in the real APIs' shapes, most of
 * them from tests/data/protocols/).  No network, no real key.
 *
 * Covered: each API whole and streamed (the bytes decode to the right
 * calls, the text comes live and in order, the request is the API's: path,
 * key header, anthropic-version, Gemini's model in the URL), 429 honouring
 * retry-after, 529 honouring retry-after-ms, 500 then success, retries that
 * run out, a stream cut before any text (retried) and after text (an
 * error), malformed streams (the bytes come back; the decoder judges),
 * 401/400/403/404 as one line with the provider's message and never the
 * key, a timeout, a server that is not there, missing keys, the
 * --base-url rule; then the parsers of http.h on their own.
 *
 * Owns: its fake server children and their temporary directories.  Must
 * not: reach the network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <libgen.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/http.h"
#include "protocol/protocol.h"
#include "util/util.h"

#define OPENAI_KEY    "sk-test-fake-0123456789abcdef"
#define ANTHROPIC_KEY "sk-ant-test-fake-9876543210"
#define GEMINI_KEY    "AIzaTestFakeGeminiKey000111"
#define GOOGLE_KEY    "AIzaTestFakeGoogleKey222333"

/* ---- the fake server ------------------------------------------------------- */

typedef struct fake {
	pid_t pid;
	int   port;
	char  dir[64];
	char  portfile[128];
	char  log[128];
} fake;

static char fake_bin[PATH_MAX];
static char script_dir[PATH_MAX + 32];

static void fake_start(fake *f)
{
	struct stat st;

	memset(f, 0, sizeof *f);
	snprintf(f->dir, sizeof f->dir, "/tmp/tg-fake-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->portfile, sizeof f->portfile, "%s/port", f->dir);
	snprintf(f->log, sizeof f->log, "%s/requests.log", f->dir);
	if (stat(fake_bin, &st) != 0)
		fail_msg("%s is not built (make it: the test target builds it)", fake_bin);
	f->pid = fork();
	assert_true(f->pid >= 0);
	if (f->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execl(fake_bin, "fake_provider", f->portfile, script_dir, f->log, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		FILE *pf = fopen(f->portfile, "r");
		if (pf) {
			int ok = fscanf(pf, "%d", &f->port) == 1;
			fclose(pf);
			if (ok)
				return;
		}
		struct timespec ts = {0, 10 * 1000000L};
		nanosleep(&ts, NULL);
	}
	fail_msg("the fake provider did not start");
}

static void fake_stop(fake *f)
{
	char path[160];

	if (f->pid > 0) {
		kill(f->pid, SIGTERM);
		while (waitpid(f->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	unlink(f->portfile);
	unlink(f->log);
	snprintf(path, sizeof path, "%s.tmp", f->portfile);
	unlink(path);
	rmdir(f->dir);
}

/* The requests the fake saw: a JSON array of {n, method, path, headers, body}. */
static json_t *fake_requests(const fake *f)
{
	json_t *all = json_array();
	FILE *lf = fopen(f->log, "r");
	char *line = NULL;
	size_t cap = 0;

	if (!lf)
		return all;
	while (getline(&line, &cap, lf) > 0) {
		json_t *v = json_loads(line, 0, NULL);
		assert_non_null(v);
		json_array_append_new(all, v);
	}
	free(line);
	fclose(lf);
	return all;
}

/* A request's header value by name (case-insensitive), or NULL. */
static const char *header(const json_t *req, const char *name)
{
	size_t i;
	json_t *h;

	json_array_foreach(json_object_get(req, "headers"), i, h)
		if (strcasecmp(json_string_value(json_array_get(h, 0)), name) == 0)
			return json_string_value(json_array_get(h, 1));
	return NULL;
}

/* No key anywhere in what was sent but in its own header. */
static void assert_key_only_in_header(const json_t *req, const char *key)
{
	size_t i;
	json_t *h;

	assert_null(strstr(json_string_value(json_object_get(req, "path")), key));
	assert_null(strstr(json_string_value(json_object_get(req, "body")), key));
	json_array_foreach(json_object_get(req, "headers"), i, h) {
		const char *name = json_string_value(json_array_get(h, 0));
		if (strstr(json_string_value(json_array_get(h, 1)), key) &&
		    strcasecmp(name, "authorization") != 0 && strcasecmp(name, "x-api-key") != 0 &&
		    strcasecmp(name, "x-goog-api-key") != 0)
			fail_msg("the key went out in the header %s", name);
	}
}

/* ---- driving a provider ----------------------------------------------------- */

typedef struct live {
	tgi_buf text;
	int     pieces;
	double  first_ms;   /* when the first piece came */
} live;

static void on_text(void *arg, const char *text, size_t len)
{
	live *l = arg;
	if (!l->pieces)
		l->first_ms = tgi_now_ms();
	l->pieces++;
	assert_int_equal(tgi_buf_append(&l->text, text, len), 0);
}

typedef struct outcome {
	int     rc;
	char   *reply;
	size_t  len;
	int     stream;
	char    err[512];
	live    live;
	double  ms;       /* how long send() took */
	double  end_ms;
} outcome;

static tgi_provider *open_provider(const char *api, const fake *f, const char *scenario,
                                   double timeout_s, int retries)
{
	char base[256], err[256] = "";
	tgi_provider *p = NULL;
	tgi_provider_opts o = {.provider = api, .base_url = base, .timeout_s = timeout_s,
	                       .retries = retries};

	snprintf(base, sizeof base, "http://127.0.0.1:%d/s/%s", f->port, scenario);
	if (tgi_provider_http(&o, &p, err, sizeof err) != 0)
		fail_msg("tgi_provider_http: %s", err);
	assert_non_null(p);
	assert_string_equal(p->ops->name, api);
	assert_non_null(p->api);
	assert_string_equal(p->api->name, api);
	return p;
}

/* A request body in api's shape; stream asks for a stream. */
static json_t *request_body(const char *api, int stream)
{
	json_t *b;
	if (strcmp(api, "openai-chat") == 0)
		b = json_pack("{s:s, s:[{s:s, s:s}]}", "model", "gpt-4.1", "messages", "role", "user",
		              "content", "read the two files");
	else if (strcmp(api, "openai-responses") == 0)
		b = json_pack("{s:s, s:[{s:s, s:s}]}", "model", "gpt-4.1", "input", "role", "user",
		              "content", "read the two files");
	else if (strcmp(api, "anthropic") == 0)
		b = json_pack("{s:s, s:i, s:[{s:s, s:s}]}", "model", "claude-sonnet-4-5",
		              "max_tokens", 1024, "messages", "role", "user", "content",
		              "read the two files");
	else
		b = json_pack("{s:[{s:s, s:[{s:s}]}]}", "contents", "role", "user", "parts", "text",
		              "read the two files");
	if (stream)
		json_object_set_new(b, "stream", json_true());
	return b;
}

static void run_send(tgi_provider *p, const json_t *body, outcome *out)
{
	double t0;

	memset(out, 0, sizeof *out);
	tgi_buf_init(&out->live.text, 1 << 20);
	t0 = tgi_now_ms();
	out->rc = p->ops->send(p, body, on_text, &out->live, &out->reply, &out->len, &out->stream,
	                       out->err, sizeof out->err);
	out->end_ms = tgi_now_ms();
	out->ms = out->end_ms - t0;
}

static void outcome_free(outcome *o)
{
	free(o->reply);
	tgi_buf_free(&o->live.text);
}

static const char *live_text(const outcome *o)
{
	return o->live.text.p ? o->live.text.p : "";
}

/* One send of api's body (stream or not) to a scenario. */
static void exchange(const char *api, const char *scenario, int stream, double timeout_s,
                     int retries, fake *f, outcome *out, json_t **requests)
{
	tgi_provider *p;
	json_t *body = request_body(api, stream);

	fake_start(f);
	p = open_provider(api, f, scenario, timeout_s, retries);
	run_send(p, body, out);
	p->ops->free(p);
	json_decref(body);
	*requests = fake_requests(f);
	fake_stop(f);
}

static char *read_data(const char *rel, size_t *len)
{
	char path[PATH_MAX + 64];
	FILE *fp;
	char *buf = malloc(1 << 20);

	snprintf(path, sizeof path, "%s/%s", script_dir, rel);
	fp = fopen(path, "rb");
	if (!fp)
		fail_msg("cannot open %s", path);
	*len = fread(buf, 1, 1 << 20, fp);
	fclose(fp);
	buf[*len] = '\0';
	return buf;
}

/* ---- each API ------------------------------------------------------------------ */

typedef struct api_case {
	const char *api;
	const char *scenario;
	int         stream;
	const char *fixture;     /* what the fake sends, from tests/data/agent/http/ */
	const char *path_end;    /* how the request's path must end */
	const char *key_header;
	const char *key_value;
	const char *names[4];    /* the calls, in order */
	const char *text;        /* the answer's text */
} api_case;

static const api_case cases[] = {
	{"openai-chat", "chat_json", 0, "../../protocols/openai-chat/parallel_calls.json",
	 "/v1/chat/completions", "authorization", "Bearer " OPENAI_KEY,
	 {"read_file", "read_file", "list_dir"}, NULL},
	{"openai-chat", "chat_sse", 1, "recorded/openai-chat-text-calls.sse",
	 "/v1/chat/completions", "authorization", "Bearer " OPENAI_KEY,
	 {"read_file", "read_file"}, "I'll read both files first."},
	{"openai-responses", "responses_json", 0, "../../protocols/openai-responses/several_calls.json",
	 "/v1/responses", "authorization", "Bearer " OPENAI_KEY,
	 {"search", "weather", "weather"}, "Checking both for you."},
	{"openai-responses", "responses_sse", 1, "../../protocols/openai-responses/several_calls.sse",
	 "/v1/responses", "authorization", "Bearer " OPENAI_KEY,
	 {"search", "weather", "weather"}, "Checking both for you."},
	{"anthropic", "anthropic_json", 0, "../../protocols/anthropic/several_calls.json",
	 "/v1/messages", "x-api-key", ANTHROPIC_KEY,
	 {"read_file", "list_dir", "search_files"},
	 "I'll look at the README, the source tree and the open TODOs at once."},
	{"anthropic", "anthropic_sse", 1, "../../protocols/anthropic/several_calls.sse",
	 "/v1/messages", "x-api-key", ANTHROPIC_KEY,
	 {"read_file", "list_dir", "search_files"},
	 "I'll look at the README, the source tree and the open TODOs at once."},
	{"gemini", "gemini_json", 0, "../../protocols/gemini/several_calls.json",
	 "/v1beta/models/gemini-2.5-flash:generateContent", "x-goog-api-key", GEMINI_KEY,
	 {"read_file", "read_file", "list_dir"}, "Checking both files and the directory."},
	{"gemini", "gemini_sse", 1, "../../protocols/gemini/stream.sse",
	 "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "x-goog-api-key",
	 GEMINI_KEY, {"read_file", "read_file", "list_dir"},
	 "Checking both files and the directory."},
};

static int ends_with(const char *s, const char *end)
{
	size_t a = strlen(s), b = strlen(end);
	return a >= b && strcmp(s + a - b, end) == 0;
}

static void check_case(const api_case *c)
{
	fake f;
	outcome o;
	json_t *reqs, *req, *sent;
	size_t want_len, n = 0;
	char *want = read_data(c->fixture, &want_len), derr[256] = "";
	tgi_pcalls pc = {0};
	const tgi_protocol *api = tgi_protocol_find(c->api);

	exchange(c->api, c->scenario, c->stream, 10, 0, &f, &o, &reqs);
	if (o.rc != 0)
		fail_msg("%s: %s", c->scenario, o.err);
	assert_int_equal(o.stream, c->stream);
	/* the bytes, exactly as the server sent them */
	assert_int_equal(o.len, want_len);
	assert_memory_equal(o.reply, want, want_len);

	/* they decode to the right calls */
	int drc = c->stream ? api->decode_stream(o.reply, o.len, &pc, derr, sizeof derr)
	                    : api->decode(o.reply, o.len, &pc, derr, sizeof derr);
	if (drc != 0)
		fail_msg("%s: decode: %s", c->scenario, derr);
	while (n < 4 && c->names[n])
		n++;
	assert_int_equal(pc.n, n);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(pc.v[i].name, c->names[i]);
		assert_null(pc.v[i].error);
	}
	if (c->text)
		assert_string_equal(pc.text, c->text);

	/* the text came live, in order, before the stream ended */
	if (c->stream) {
		assert_string_equal(live_text(&o), c->text);
		assert_true(o.live.pieces >= 2);
		assert_true(o.live.first_ms < o.end_ms - 20);
	} else {
		assert_int_equal(o.live.pieces, 0);
	}

	/* the request was the API's */
	assert_int_equal(json_array_size(reqs), 1);
	req = json_array_get(reqs, 0);
	assert_string_equal(json_string_value(json_object_get(req, "method")), "POST");
	if (!ends_with(json_string_value(json_object_get(req, "path")), c->path_end))
		fail_msg("path %s", json_string_value(json_object_get(req, "path")));
	assert_non_null(header(req, c->key_header));
	assert_string_equal(header(req, c->key_header), c->key_value);
	assert_key_only_in_header(req, c->key_value + (c->key_value[0] == 'B' ? 7 : 0));
	assert_string_equal(header(req, "content-type"), "application/json");
	if (strcmp(c->api, "anthropic") == 0)
		assert_string_equal(header(req, "anthropic-version"), "2023-06-01");
	else
		assert_null(header(req, "anthropic-version"));
	sent = json_loads(json_string_value(json_object_get(req, "body")), 0, NULL);
	assert_non_null(sent);
	if (strcmp(c->api, "gemini") == 0) {
		/* the model and the stream are in the URL, not the body */
		assert_null(json_object_get(sent, "model"));
		assert_null(json_object_get(sent, "stream"));
		assert_non_null(json_object_get(sent, "contents"));
	} else {
		assert_non_null(json_string_value(json_object_get(sent, "model")));
		assert_int_equal(json_is_true(json_object_get(sent, "stream")), c->stream);
	}
	json_decref(sent);

	tgi_pcalls_free(&pc);
	json_decref(reqs);
	free(want);
	outcome_free(&o);
}

static void test_each_api_whole(void **state)
{
	for (size_t i = 0; i < TGI_ARRAY_LEN(cases); i++)
		if (!cases[i].stream)
			check_case(&cases[i]);
}

static void test_each_api_streamed(void **state)
{
	for (size_t i = 0; i < TGI_ARRAY_LEN(cases); i++)
		if (cases[i].stream)
			check_case(&cases[i]);
}

/* A body without a model gets the provider's (--model, else the default). */
static void test_model_filled_in(void **state)
{
	fake f;
	char base[128], err[256];
	tgi_provider *p = NULL;
	outcome o;
	json_t *body = json_pack("{s:[{s:s, s:s}]}", "messages", "role", "user", "content", "hi");

	fake_start(&f);
	snprintf(base, sizeof base, "http://127.0.0.1:%d/s/chat_json", f.port);
	tgi_provider_opts opts = {.provider = "openai-chat", .base_url = base, .model = "my-model"};
	assert_int_equal(tgi_provider_http(&opts, &p, err, sizeof err), 0);
	run_send(p, body, &o);
	assert_int_equal(o.rc, 0);
	p->ops->free(p);
	json_t *reqs = fake_requests(&f);
	json_t *sent = json_loads(json_string_value(json_object_get(json_array_get(reqs, 0), "body")),
	                          0, NULL);
	assert_string_equal(json_string_value(json_object_get(sent, "model")), "my-model");
	json_decref(sent);
	json_decref(reqs);
	json_decref(body);
	outcome_free(&o);
	fake_stop(&f);
}

/* ---- retries -------------------------------------------------------------------- */

static void test_429_honours_retry_after(void **state)
{
	fake f;
	outcome o;
	json_t *reqs;

	exchange("openai-chat", "retry_429", 0, 10, 0, &f, &o, &reqs);
	if (o.rc != 0)
		fail_msg("%s", o.err);
	assert_true(o.ms >= 1000);   /* retry-after: 1 */
	assert_true(o.ms < 5000);
	assert_int_equal(json_array_size(reqs), 2);
	/* the same request twice */
	assert_string_equal(json_string_value(json_object_get(json_array_get(reqs, 0), "body")),
	                    json_string_value(json_object_get(json_array_get(reqs, 1), "body")));
	assert_true(ends_with(json_string_value(json_object_get(json_array_get(reqs, 1), "path")),
	                      "/v1/chat/completions"));
	json_decref(reqs);
	outcome_free(&o);
}

static void test_529_honours_retry_after_ms(void **state)
{
	fake f;
	outcome o;
	json_t *reqs;

	exchange("anthropic", "retry_529_ms", 0, 10, 0, &f, &o, &reqs);
	if (o.rc != 0)
		fail_msg("%s", o.err);
	assert_true(o.ms >= 1200);   /* retry-after-ms: 1200 wins over retry-after: 0 */
	assert_int_equal(json_array_size(reqs), 2);
	json_decref(reqs);
	outcome_free(&o);
}

static void test_500_then_success(void **state)
{
	fake f;
	outcome o;
	json_t *reqs;
	tgi_pcalls pc = {0};
	char derr[256];

	exchange("openai-chat", "retry_500", 0, 10, 0, &f, &o, &reqs);
	if (o.rc != 0)
		fail_msg("%s", o.err);
	assert_true(o.ms >= 375);    /* the first backoff: 0.5 s less at most a quarter */
	assert_int_equal(json_array_size(reqs), 2);
	assert_int_equal(tgi_protocol_openai_chat.decode(o.reply, o.len, &pc, derr, sizeof derr), 0);
	assert_int_equal(pc.n, 3);
	tgi_pcalls_free(&pc);
	json_decref(reqs);
	outcome_free(&o);
}

static void test_retries_run_out(void **state)
{
	fake f;
	outcome o;
	json_t *reqs;

	exchange("openai-chat", "always_503", 0, 10, 2, &f, &o, &reqs);
	assert_int_equal(o.rc, -1);
	assert_null(o.reply);
	assert_string_equal(o.err, "openai-chat: 503 Service Unavailable: The engine is currently "
	                           "overloaded, please try again later (after 3 attempts)");
	assert_int_equal(json_array_size(reqs), 3);
	assert_true(o.ms >= 375 + 750); /* 0.5 s then 1 s, each less at most a quarter */
	json_decref(reqs);
	outcome_free(&o);
}

/* ---- streams cut, streams malformed ---------------------------------------------- */

static void test_drop_before_text_is_retried(void **state)
{
	fake f;
	outcome o;
	json_t *reqs;
	tgi_pcalls pc = {0};
	char derr[256];

	exchange("openai-chat", "drop_then_ok", 1, 10, 0, &f, &o, &reqs);
	if (o.rc != 0)
		fail_msg("%s", o.err);
	assert_int_equal(json_array_size(reqs), 2);
	assert_int_equal(o.stream, 1);
	/* the reply is the second, whole stream: not the cut one glued to it */
	assert_int_equal(tgi_protocol_openai_chat.decode_stream(o.reply, o.len, &pc, derr,
	                                                         sizeof derr), 0);
	assert_int_equal(pc.n, 2);
	assert_null(pc.v[0].error);
	assert_null(pc.v[1].error);
	assert_string_equal(pc.v[0].args, "{\"path\": \"README.md\"}");
	tgi_pcalls_free(&pc);
	json_decref(reqs);
	outcome_free(&o);
}

static void test_drop_after_text_is_an_error(void **state)
{
	fake f;
	outcome o;
	json_t *reqs;
	const char *want = "the stream from openai-chat ended early";

	exchange("openai-chat", "drop_after_text", 1, 10, 0, &f, &o, &reqs);
	assert_int_equal(o.rc, -1);
	assert_null(o.reply);
	if (strncmp(o.err, want, strlen(want)) != 0)
		fail_msg("err: %s", o.err);
	assert_null(strchr(o.err, '\n'));
	assert_string_equal(live_text(&o), "I'll read both files");
	assert_int_equal(json_array_size(reqs), 1); /* shown text is not shown twice */
	json_decref(reqs);
	outcome_free(&o);
}

static void test_malformed_arguments(void **state)
{
	fake f;
	outcome o;
	json_t *reqs;
	tgi_pcalls pc = {0};
	char derr[256];

	exchange("openai-chat", "bad_args", 1, 10, 0, &f, &o, &reqs);
	if (o.rc != 0)
		fail_msg("%s", o.err);
	assert_int_equal(json_array_size(reqs), 1);
	assert_int_equal(tgi_protocol_openai_chat.decode_stream(o.reply, o.len, &pc, derr,
	                                                         sizeof derr), 0);
	assert_int_equal(pc.n, 2);
	assert_non_null(pc.v[0].error); /* an invalid call, for the gate to record */
	assert_non_null(strstr(pc.v[0].error, "not valid JSON"));
	assert_null(pc.v[1].error);     /* its sibling still runs */
	assert_string_equal(pc.v[1].name, "list_dir");
	tgi_pcalls_free(&pc);
	json_decref(reqs);
	outcome_free(&o);
}

static void test_malformed_event(void **state)
{
	fake f;
	outcome o;
	json_t *reqs;
	tgi_pcalls pc = {0};
	char derr[256] = "";
	size_t want_len;
	char *want = read_data("recorded/openai-chat-bad-line.sse", &want_len);

	exchange("openai-chat", "bad_line", 1, 10, 0, &f, &o, &reqs);
	if (o.rc != 0)
		fail_msg("%s", o.err);
	/* the provider hands back the bytes as they came; the live text skips the
	 * broken event; the decoder says what is wrong */
	assert_int_equal(o.len, want_len);
	assert_memory_equal(o.reply, want, want_len);
	assert_string_equal(live_text(&o), "I'll read first.");
	assert_int_equal(tgi_protocol_openai_chat.decode_stream(o.reply, o.len, &pc, derr,
	                                                         sizeof derr), -1);
	assert_non_null(strstr(derr, "not JSON"));
	tgi_pcalls_free(&pc);
	free(want);
	json_decref(reqs);
	outcome_free(&o);
}

/* ---- errors that are not retried ---------------------------------------------------- */

static void test_401_one_line_without_key(void **state)
{
	fake f;
	outcome o;
	json_t *reqs;

	exchange("openai-chat", "unauthorized", 0, 10, 0, &f, &o, &reqs);
	assert_int_equal(o.rc, -1);
	assert_string_equal(o.err, "openai-chat: 401 Unauthorized: Incorrect API key provided: "
	                           "[redacted]. You can find your API key at "
	                           "https://platform.openai.com/account/api-keys.");
	assert_null(strstr(o.err, OPENAI_KEY));
	assert_int_equal(json_array_size(reqs), 1);
	json_decref(reqs);
	outcome_free(&o);
}

/* A body that is not JSON is quoted only in part: a key the cut would
 * split is masked before the cut, not a prefix of it left. */
static void test_key_cut_by_quote_is_masked(void **state)
{
	fake f;
	outcome o;
	json_t *reqs;

	exchange("openai-chat", "key_cut", 0, 10, 0, &f, &o, &reqs);
	assert_int_equal(o.rc, -1);
	assert_non_null(strstr(o.err, "401 Unauthorized: The gateway"));
	assert_null(strstr(o.err, "sk-test-fake"));
	json_decref(reqs);
	outcome_free(&o);
}

static void test_error_bodies_of_each_api(void **state)
{
	static const struct { const char *api, *scenario, *want; } t[] = {
		{"anthropic", "anthropic_401", "anthropic: 401 Unauthorized: invalid x-api-key"},
		{"gemini", "gemini_400", "gemini: 400 Bad Request: API key not valid. Please pass a "
		                         "valid API key. (INVALID_ARGUMENT)"},
		{"openai-responses", "responses_404", "openai-responses: 404 Not Found: The model "
		 "`gpt-nope` does not exist or you do not have access to it."},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(t); i++) {
		fake f;
		outcome o;
		json_t *reqs;
		exchange(t[i].api, t[i].scenario, 0, 10, 0, &f, &o, &reqs);
		assert_int_equal(o.rc, -1);
		assert_string_equal(o.err, t[i].want);
		assert_int_equal(json_array_size(reqs), 1);
		json_decref(reqs);
		outcome_free(&o);
	}
	/* an HTML page says nothing: the status and where */
	fake f;
	outcome o;
	json_t *reqs;
	char want[256];
	exchange("openai-chat", "html_403", 0, 10, 0, &f, &o, &reqs);
	snprintf(want, sizeof want,
	         "openai-chat: 403 Forbidden (POST http://127.0.0.1:%d/s/html_403/v1/chat/completions)",
	         f.port);
	assert_int_equal(o.rc, -1);
	assert_string_equal(o.err, want);
	json_decref(reqs);
	outcome_free(&o);
}

static void test_timeout(void **state)
{
	fake f;
	outcome o;
	json_t *reqs;

	exchange("openai-chat", "slow", 0, 0.5, 1, &f, &o, &reqs);
	assert_int_equal(o.rc, -1);
	if (!strstr(o.err, "no reply from") || !strstr(o.err, "(after 2 attempts)"))
		fail_msg("err: %s", o.err);
	assert_true(o.ms >= 1000 + 375);
	assert_true(o.ms < 3500);
	json_decref(reqs);
	outcome_free(&o);
}

static void test_nobody_there(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof a;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	char base[128], err[256], want[200];
	tgi_provider *p = NULL;
	outcome o;
	json_t *body = request_body("openai-chat", 0);

	/* a port that was free a moment ago */
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &alen), 0);
	close(s);
	snprintf(base, sizeof base, "http://user:pw@127.0.0.1:%d/v1/", ntohs(a.sin_port));
	tgi_provider_opts opts = {.provider = "openai-chat", .base_url = base, .retries = -1};
	assert_int_equal(tgi_provider_http(&opts, &p, err, sizeof err), 0);
	run_send(p, body, &o);
	assert_int_equal(o.rc, -1);
	snprintf(want, sizeof want, "openai-chat: cannot reach http://127.0.0.1:%d/v1/chat/completions: ",
	         ntohs(a.sin_port));
	if (strncmp(o.err, want, strlen(want)) != 0)
		fail_msg("err: %s", o.err);
	assert_null(strstr(o.err, "pw"));
	p->ops->free(p);
	json_decref(body);
	outcome_free(&o);
}

/* ---- keys and URLs --------------------------------------------------------------------- */

static void test_missing_keys(void **state)
{
	tgi_provider *p = NULL;
	char err[256];
	tgi_provider_opts o = {.provider = "openai-chat"};

	unsetenv("OPENAI_API_KEY");
	assert_int_equal(tgi_provider_http(&o, &p, err, sizeof err), -1);
	assert_null(p);
	assert_string_equal(err, "set OPENAI_API_KEY (or use --base-url for a local "
	                         "OpenAI-compatible server)");
	o.provider = "openai-responses";
	assert_int_equal(tgi_provider_http(&o, &p, err, sizeof err), -1);
	assert_string_equal(err, "set OPENAI_API_KEY (or use --base-url for a local "
	                         "OpenAI-compatible server)");

	unsetenv("ANTHROPIC_API_KEY");
	o.provider = "anthropic";
	o.base_url = "http://127.0.0.1:9/";   /* a base does not make Anthropic's key optional */
	assert_int_equal(tgi_provider_http(&o, &p, err, sizeof err), -1);
	assert_string_equal(err, "set ANTHROPIC_API_KEY");

	unsetenv("GEMINI_API_KEY");
	unsetenv("GOOGLE_API_KEY");
	o.provider = "gemini";
	assert_int_equal(tgi_provider_http(&o, &p, err, sizeof err), -1);
	assert_string_equal(err, "set GEMINI_API_KEY (or GOOGLE_API_KEY)");

	o.provider = "scripted";
	assert_int_equal(tgi_provider_http(&o, &p, err, sizeof err), -1);
	assert_non_null(strstr(err, "not an HTTP provider"));

	/* a key that would end its header line and start another */
	setenv("OPENAI_API_KEY", "sk-abc\r\nX-Evil: 1", 1);
	o.provider = "openai-chat";
	o.base_url = NULL;
	assert_int_equal(tgi_provider_http(&o, &p, err, sizeof err), -1);
	assert_null(p);
	assert_string_equal(err, "OPENAI_API_KEY holds a space or a control character: not a key");

	setenv("OPENAI_API_KEY", OPENAI_KEY, 1);
	setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY, 1);
	setenv("GEMINI_API_KEY", GEMINI_KEY, 1);
}

/* A local OpenAI-compatible server needs no key: none is sent. */
static void test_base_url_without_key(void **state)
{
	fake f;
	outcome o;
	json_t *reqs;

	unsetenv("OPENAI_API_KEY");
	exchange("openai-chat", "chat_json", 0, 10, 0, &f, &o, &reqs);
	setenv("OPENAI_API_KEY", OPENAI_KEY, 1);
	if (o.rc != 0)
		fail_msg("%s", o.err);
	assert_null(header(json_array_get(reqs, 0), "authorization"));
	json_decref(reqs);
	outcome_free(&o);
}

/* GOOGLE_API_KEY when GEMINI_API_KEY is not set. */
static void test_google_api_key(void **state)
{
	fake f;
	outcome o;
	json_t *reqs;

	unsetenv("GEMINI_API_KEY");
	setenv("GOOGLE_API_KEY", GOOGLE_KEY, 1);
	exchange("gemini", "gemini_json", 0, 10, 0, &f, &o, &reqs);
	setenv("GEMINI_API_KEY", GEMINI_KEY, 1);
	unsetenv("GOOGLE_API_KEY");
	if (o.rc != 0)
		fail_msg("%s", o.err);
	assert_string_equal(header(json_array_get(reqs, 0), "x-goog-api-key"), GOOGLE_KEY);
	json_decref(reqs);
	outcome_free(&o);
}

/* --base-url ending in /v1 (or /v1/) gets /chat/completions, else /v1/chat/completions. */
static void test_base_url_rule(void **state)
{
	static const struct { const char *api, *suffix, *scenario, *path; } t[] = {
		{"openai-chat", "/v1", "chat_json", "/s/chat_json/v1/chat/completions"},
		{"openai-chat", "/v1/", "chat_json", "/s/chat_json/v1/chat/completions"},
		{"openai-chat", "/", "chat_json", "/s/chat_json/v1/chat/completions"},
		{"openai-responses", "/v1", "responses_json", "/s/responses_json/v1/responses"},
		{"anthropic", "/v1", "anthropic_json", "/s/anthropic_json/v1/messages"},
		{"gemini", "/v1beta", "gemini_json",
		 "/s/gemini_json/v1beta/models/gemini-2.5-flash:generateContent"},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(t); i++) {
		fake f;
		char base[160], err[256];
		tgi_provider *p = NULL;
		outcome o;
		json_t *body = request_body(t[i].api, 0), *reqs;

		fake_start(&f);
		snprintf(base, sizeof base, "http://127.0.0.1:%d/s/%s%s", f.port, t[i].scenario,
		         t[i].suffix);
		tgi_provider_opts opts = {.provider = t[i].api, .base_url = base};
		assert_int_equal(tgi_provider_http(&opts, &p, err, sizeof err), 0);
		run_send(p, body, &o);
		if (o.rc != 0)
			fail_msg("%s: %s", base, o.err);
		reqs = fake_requests(&f);
		assert_string_equal(json_string_value(json_object_get(json_array_get(reqs, 0), "path")),
		                    t[i].path);
		p->ops->free(p);
		json_decref(reqs);
		json_decref(body);
		outcome_free(&o);
		fake_stop(&f);
	}
}

static void test_bad_options(void **state)
{
	tgi_provider *p = NULL;
	char err[256];
	tgi_provider_opts o = {.provider = "openai-chat", .base_url = "ftp://example.com"};
	assert_int_equal(tgi_provider_http(&o, &p, err, sizeof err), -1);
	assert_non_null(strstr(err, "not an http:// or https:// URL"));
	assert_null(p);
	/* a URL with no host is refused at once, not retried against a host made of its path */
	static const char *const hostless[] = {"http://", "https:///v1", "http://?x", "http://:8080"};
	for (size_t i = 0; i < sizeof hostless / sizeof *hostless; i++) {
		o = (tgi_provider_opts){.provider = "openai-chat", .base_url = hostless[i]};
		assert_int_equal(tgi_provider_http(&o, &p, err, sizeof err), -1);
		assert_null(p);
		assert_non_null(strstr(err, "URL with a host"));
	}

	/* a Gemini model name that would change the URL is refused before anything is sent */
	o = (tgi_provider_opts){.provider = "gemini", .model = "x/../../evil?key=1",
	                        .base_url = "http://127.0.0.1:9"};
	assert_int_equal(tgi_provider_http(&o, &p, err, sizeof err), 0);
	json_t *body = request_body("gemini", 0);
	outcome out;
	run_send(p, body, &out);
	assert_int_equal(out.rc, -1);
	assert_non_null(strstr(out.err, "is not a model name"));
	p->ops->free(p);
	json_decref(body);
	outcome_free(&out);
}

/* ---- the parsers ------------------------------------------------------------------------ */

static void test_retry_after(void **state)
{
	const int64_t t = 784111777000LL; /* Sun, 06 Nov 1994 08:49:37 GMT */

	assert_int_equal(tgi_http_retry_after("1", 0), 1000);
	assert_int_equal(tgi_http_retry_after(" 7 ", 0), 7000);
	assert_int_equal(tgi_http_retry_after("1.5", 0), 1500);
	assert_int_equal(tgi_http_retry_after("0", 0), 0);
	assert_int_equal(tgi_http_retry_after("99999999999999", 0), 86400000);
	assert_int_equal(tgi_http_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", t), 0);
	assert_int_equal(tgi_http_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", t), 30000);
	assert_int_equal(tgi_http_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", t), 0); /* past */
	assert_int_equal(tgi_http_retry_after("Wed, 01 Mar 2000 00:00:00 GMT",
	                                      951868800000LL - 2000), 2000); /* after Feb 29 */
	assert_int_equal(tgi_http_retry_after("", 0), -1);
	assert_int_equal(tgi_http_retry_after("-1", 0), -1);
	assert_int_equal(tgi_http_retry_after("1s", 0), -1);
	assert_int_equal(tgi_http_retry_after("soon", 0), -1);
	assert_int_equal(tgi_http_retry_after("Sun, 06 Nov 1994 08:49:37 PST", t), -1);
	assert_int_equal(tgi_http_retry_after("Sun, 36 Nov 1994 08:49:37 GMT", t), -1);
	assert_int_equal(tgi_http_retry_after(NULL, 0), -1);
	assert_int_equal(tgi_http_retry_after_ms("250"), 250);
	assert_int_equal(tgi_http_retry_after_ms("250.7"), 250);
	assert_int_equal(tgi_http_retry_after_ms("x"), -1);
}

static void test_error_message(void **state)
{
	static const struct { const char *body, *want; } t[] = {
		{"{\"error\":{\"message\":\"bad\",\"type\":\"x\"}}", "bad"},
		{"{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
		 "Overloaded"},
		{"{\"error\":{\"code\":404,\"message\":\"models/x is not found\",\"status\":\"NOT_FOUND\"}}",
		 "models/x is not found (NOT_FOUND)"},
		{"[{\"error\":{\"code\":429,\"message\":\"quota\",\"status\":\"RESOURCE_EXHAUSTED\"}}]",
		 "quota (RESOURCE_EXHAUSTED)"},
		{"{\"error\":\"model 'llama9' not found\"}", "model 'llama9' not found"},
		{"{\"detail\":\"Not Found\"}", "Not Found"},
		{"{\"error\":{\"message\":\"two\\nlines\"}}", "two lines"},
		{"{\"error\":{\"code\":1}}", ""},
		{"<html><body>502</body></html>", ""},
		{"upstream connect error", "upstream connect error"},
		{"", ""},
	};
	char out[256];
	for (size_t i = 0; i < TGI_ARRAY_LEN(t); i++) {
		tgi_http_error_message(t[i].body, strlen(t[i].body), out, sizeof out);
		assert_string_equal(out, t[i].want);
	}
	/* cut to the room there is */
	tgi_http_error_message("{\"error\":{\"message\":\"abcdefghij\"}}", 34, out, 5);
	assert_string_equal(out, "abcd");
}

static void collect(void *arg, const char *text, size_t len)
{
	assert_int_equal(tgi_buf_append(arg, text, len), 0);
	assert_int_equal(tgi_buf_append(arg, "|", 1), 0);
}

static void test_event_text(void **state)
{
	static const struct { const char *api, *data, *want; } t[] = {
		{"openai-chat", "{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}", "Hi|"},
		{"openai-chat", "{\"choices\":[{\"delta\":{\"content\":null}}]}", ""},
		{"openai-chat", "[DONE]", ""},
		{"openai-responses", "{\"type\":\"response.output_text.delta\",\"delta\":\"Yo\"}", "Yo|"},
		{"openai-responses", "{\"type\":\"response.function_call_arguments.delta\",\"delta\":\"{\"}",
		 ""},
		{"anthropic", "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\","
		              "\"text\":\"Hm\"}}", "Hm|"},
		{"anthropic", "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"thinking_delta\","
		              "\"thinking\":\"secret\"}}", ""},
		{"gemini", "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"think\",\"thought\":true},"
		           "{\"text\":\"a\"},{\"functionCall\":{\"name\":\"f\"}},{\"text\":\"b\"}]}}]}",
		 "a|b|"},
		{"gemini", "{\"candidates\":", ""},
		{"nope", "{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}", ""},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(t); i++) {
		tgi_buf b;
		tgi_buf_init(&b, 1024);
		tgi_http_event_text(t[i].api, t[i].data, strlen(t[i].data), collect, &b);
		assert_string_equal(b.p ? b.p : "", t[i].want);
		tgi_buf_free(&b);
	}
}

static int setup(void **state)
{
	char exe[PATH_MAX], root[PATH_MAX];
	const char *env = getenv("TOOLGATE_ROOT");
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	/* BUILD/tests/test_agent_http → BUILD/fake_provider */
	snprintf(fake_bin, sizeof fake_bin, "%s/../fake_provider", dirname(exe));
	if (!realpath(env && *env ? env : ".", root))
		return -1;
	snprintf(script_dir, sizeof script_dir, "%s/tests/data/agent/http", root);
	setenv("OPENAI_API_KEY", OPENAI_KEY, 1);
	setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY, 1);
	setenv("GEMINI_API_KEY", GEMINI_KEY, 1);
	unsetenv("GOOGLE_API_KEY");
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_api_whole),
		cmocka_unit_test(test_each_api_streamed),
		cmocka_unit_test(test_model_filled_in),
		cmocka_unit_test(test_429_honours_retry_after),
		cmocka_unit_test(test_529_honours_retry_after_ms),
		cmocka_unit_test(test_500_then_success),
		cmocka_unit_test(test_retries_run_out),
		cmocka_unit_test(test_drop_before_text_is_retried),
		cmocka_unit_test(test_drop_after_text_is_an_error),
		cmocka_unit_test(test_malformed_arguments),
		cmocka_unit_test(test_malformed_event),
		cmocka_unit_test(test_401_one_line_without_key),
		cmocka_unit_test(test_key_cut_by_quote_is_masked),
		cmocka_unit_test(test_error_bodies_of_each_api),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_nobody_there),
		cmocka_unit_test(test_missing_keys),
		cmocka_unit_test(test_base_url_without_key),
		cmocka_unit_test(test_google_api_key),
		cmocka_unit_test(test_base_url_rule),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_error_message),
		cmocka_unit_test(test_event_text),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
