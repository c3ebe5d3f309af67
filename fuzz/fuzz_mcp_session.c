/*
 * fuzz_mcp_session.c — one MCP session (src/mcp/server.c) fed the input as
 * client messages, one per line, against a gate on a scratch workspace in
 * `plan` mode (calls are decided, nothing writes).  Every message the
 * session sends must be one line of JSON-RPC 2.0; each request gets at
 * most one response; freeing the session returns.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "fuzz.h"
#include "mcp/server.h"

static tg_gate *gate;
static tgi_mcp_server *server;

static int sent(void *arg, const json_t *related, int final, const char *text, size_t len)
{
	(void)arg;
	(void)related;
	if (!text)     /* the end of a call's answers, or (final 0) a probe: is the client there? */
		return 0;
	check(memchr(text, '\n', len) == NULL);
	json_t *m = json_loadb(text, len, 0, NULL);
	check(m != NULL);
	check(!strcmp(json_string_value(json_object_get(m, "jsonrpc")), "2.0"));
	const json_t *err = json_object_get(m, "error");
	if (err)
		check(printable(json_string_value(json_object_get(err, "message"))));
	json_decref(m);
	return 0;
}

static void open_gate(void)
{
	char ws[] = "/tmp/tg-fuzz-mcp.XXXXXX";
	if (!mkdtemp(ws))
		abort();
	char path[64];
	snprintf(path, sizeof path, "%s/a.txt", ws);
	FILE *f = fopen(path, "w");
	if (f) {
		fputs("hello\n", f);
		fclose(f);
	}
	tg_options o = {.workspace = ws, .mode = "plan", .sync_full = 0};
	char *err = NULL;
	unsetenv("TOOLGATE_CONFIG");
	if (tg_gate_open(&o, &gate, &err) != 0) {
		fprintf(stderr, "gate: %s\n", err);
		abort();
	}
	tg_serve_options so = {.page_size = 2, .elicit_timeout_s = 1, .progress_ms = 50};
	server = tgi_mcp_server_new(gate, &so);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!gate)
		open_gate();
	tgi_mcp_session *ss = tgi_mcp_session_new(server, NULL, NULL, sent, NULL);
	const char *p = (const char *)data, *end = p + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		tgi_mcp_session_handle(ss, p, n);
		p += n + (nl != NULL);
	}
	tgi_mcp_session_drain(ss, -1);
	tgi_mcp_session_free(ss);
	return 0;
}
