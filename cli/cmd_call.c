/*
 * cmd_call.c — `toolgate call`: one call (or a batch) through the gate,
 * from a pipe or a shell.  Exits with the status's code.  To a pipe (and
 * with --json) it prints the envelope, as JSON; on a terminal a short
 * result for a person: the status, a one-line reason, the output as text
 * (a dry run's plan: the diff, the command), and where the whole envelope
 * is (toolgate log --op ID --json).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate call [options] TOOL [ARGS]\n"
	"       toolgate call [options] --batch FILE\n\n"
	"ARGS is a JSON object, @FILE, or - for standard input (default {}).\n"
	"A batch is a JSON array of {\"tool\", \"args\", \"call_id\", \"idempotency_key\"};\n"
	"the results come back as an array, in call order.\n\n"
	"options:\n"
	"  --batch FILE         run the calls of FILE (or - for standard input) as one batch\n"
	"  --as NAME            call as this principal (else $TOOLGATE_PRINCIPAL, token, default)\n"
	"  --key KEY            idempotency key\n"
	"  --call-id ID         the provider's call id\n"
	"  --session ID         session id\n"
	"  --dry-run            every stage up to execute, then the plan instead of the run\n"
	"                       (a file's diff, a command's argv/workdir/sandbox/env); nothing\n"
	"                       runs or is written, no approval is spent\n"
	"  --json               the envelope as compact JSON (on a terminal too; to a pipe\n"
	"                       without --json: indented JSON)\n"
	CLI_COLOR_HELP CLI_GATE_OPTIONS_HELP
	"\nexit: 0 persisted/replayed/dry_run, 2 invalid, 3 denied, 4 failed, 5 pending,\n"
	"      6 committed (ran, but the ledger write failed), 1 usage or configuration error;\n"
	"      130/143 stopped by SIGINT/SIGTERM (the call recorded failed, applied unknown:\n"
	"      toolgate ops list --unknown)\n";

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* The stage that stopped the call (the first one not ok), or NULL. */
static const char *stopped_at(const json_t *env)
{
	size_t i;
	json_t *st;
	json_array_foreach(json_object_get(env, "stages"), i, st)
		if (json_is_false(json_object_get(st, "ok")))
			return str(st, "stage");
	return NULL;
}

/* One result for a person at a terminal. */
static void print_human(const char *text)
{
	json_t *env = json_loads(text, 0, NULL);
	const char *status = str(env, "status"), *op = str(env, "op_id"), *stage = stopped_at(env);
	json_t *err = json_object_get(env, "error"), *out = json_object_get(env, "output");
	cli_status(stdout, status, 0);
	fputs("  ", stdout);
	cli_paint(stdout, "1", str(env, "tool"));
	if (stage && strcmp(stage, "persist")) {
		fputs("  [", stdout);
		cli_paint(stdout, "", stage);
		putchar(']');
	}
	putchar('\n');
	if (json_is_object(err)) {          /* the reason, on one line */
		fputs("  ", stdout);
		cli_paint(stdout, "", str(err, "kind"));
		fputs(": ", stdout);
		cli_paint(stdout, "", str(err, "message"));
		putchar('\n');
		if (str(err, "rule") && strcmp(str(err, "rule"), "")) {
			fputs("  rule: ", stdout);
			cli_paint(stdout, "", str(err, "rule"));
			putchar('\n');
		}
		if (str(err, "approval_id"))
			printf("  approve it: toolgate approvals approve %s, then run the same call again\n",
			       str(err, "approval_id"));
	}
	if (status && !strcmp(status, "dry_run") && json_is_object(out)) {
		fputs("  would run ", stdout);
		cli_paint(stdout, "1", str(out, "would_run"));
		fputs(": ", stdout);
		cli_status(stdout, str(out, "decision"), 0);
		fputs(" (", stdout);
		cli_paint(stdout, "", str(out, "decided_by"));
		fputs(")\n", stdout);
		if (json_is_object(json_object_get(out, "plan")))
			cli_plan(stdout, json_object_get(out, "plan"));
		puts("  nothing ran and nothing was written (--dry-run)");
	} else if (out && !json_is_null(out)) {
		cli_value(stdout, out, 0);
	}
	json_t *cut = json_object_get(env, "truncated");
	if (json_is_object(cut)) {             /* the output was cut for the model */
		printf("(the output was cut from %lld characters", (long long)json_integer_value(
		       json_object_get(cut, "original_chars")));
		if (str(cut, "spill_path")) {
			fputs("; all of it: ", stdout);
			cli_paint(stdout, "", str(cut, "spill_path"));
		}
		puts(")");
	}
	if (op && status && strcmp(status, "committed"))
		printf("the whole envelope: toolgate log --op %s --json\n", op);
	else if (op)
		puts("the ledger write failed: the envelope is only in the --json output");
	json_decref(env);
}

/* SIGINT or SIGTERM while the call runs: TG_CANCEL_SIGNAL(sig), the
 * call's cancel flag.  The gate stops the tool (its process group is
 * killed) and records the call; then toolgate exits by that signal. */
static volatile int interrupted;

static void on_signal(int sig)
{
	if (!interrupted)
		interrupted = TG_CANCEL_SIGNAL(sig);
}

/* Catch SIGINT and SIGTERM, unless they are ignored (a background job of
 * a script): without SA_RESTART, so a terminal prompt gives up at once. */
static void catch_signals(void)
{
	static const int sigs[] = {SIGINT, SIGTERM};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction sa, old;
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}

/* The call was recorded and printed: end as the signal would have. */
static void reraise(void)
{
	int sig = interrupted & 0xff;
	if (!interrupted)
		return;
	fflush(stdout);
	signal(sig, SIG_DFL);
	raise(sig);
}

static int run_batch(tg_gate *g, const char *src, int compact, const tg_request *tmpl)
{
	size_t len;
	char *text = cli_read_input(src, tg_gate_max_args_bytes(g) * 16, &len);
	if (!text)
		return 1;
	json_error_t je;
	json_t *arr = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!json_is_array(arr)) {
		json_decref(arr);
		return cli_error("the batch must be a JSON array of calls (%s)", arr ? "not an array"
		                                                                     : je.text);
	}
	size_t n = json_array_size(arr);
	tg_request *reqs = calloc(n ? n : 1, sizeof *reqs);
	char **args = calloc(n ? n : 1, sizeof *args);
	tg_result **res = calloc(n ? n : 1, sizeof *res);
	for (size_t i = 0; i < n; i++) {
		json_t *c = json_array_get(arr, i);
		reqs[i] = *tmpl;
		reqs[i].tool = json_string_value(json_object_get(c, "tool"));
		json_t *a = json_object_get(c, "args");
		args[i] = a ? json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		reqs[i].args = args[i];
		reqs[i].call_id = json_string_value(json_object_get(c, "call_id"));
		if (json_object_get(c, "idempotency_key"))
			reqs[i].idempotency_key = json_string_value(json_object_get(c, "idempotency_key"));
	}
	tg_call_batch(g, reqs, n, res);
	int code = 0, human = !compact && cli_tty(stdout);
	json_t *out = json_array();
	for (size_t i = 0; i < n; i++) {
		int ec = tg_status_exit_code(tg_result_status(res[i]));
		if (!code && ec)
			code = ec;
		if (human) {
			if (i)
				putchar('\n');
			print_human(tg_result_json(res[i], 0));
		} else {
			json_array_append_new(out, json_loads(tg_result_json(res[i], 0), 0, NULL));
		}
		tg_result_free(res[i]);
		free(args[i]);
	}
	if (!human) {
		char *s = json_dumps(out, (compact ? JSON_COMPACT : JSON_INDENT(2)) |
		                              JSON_REAL_PRECISION(6));
		puts(s ? s : "[]");
		free(s);
	}
	json_decref(out);
	json_decref(arr);
	free(reqs);
	free(args);
	free(res);
	return code;
}

static tg_request  req;      /* --as, --key, --call-id, --session, --dry-run */
static const char *batch;    /* --batch FILE */
static int         compact;  /* --json */
static char      **operands; /* TOOL [ARGS] */
static int         noperands;

int cmd_call(cli_run *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"as", 1, 0, 'a'},      {"key", 1, 0, 'k'},   {"call-id", 1, 0, 'c'},
		{"session", 1, 0, 's'}, {"dry-run", 0, 0, 'n'}, {"json", 0, 0, 'j'},
		{"batch", 1, 0, 'b'},   {"help", 0, 0, 'h'},  CLI_COLOR_LONGOPT,
		CLI_GATE_LONGOPTS,      {0, 0, 0, 0},
	};
	int opt;
	r->usage = usage_text;
	while ((opt = cli_getopt(r, argc, argv, "h", longopts)) > 0) {
		switch (opt) {
		case 'a': req.principal = optarg; break;
		case 'k': req.idempotency_key = optarg; break;
		case 'c': req.call_id = optarg; break;
		case 's': req.session = optarg; break;
		case 'n': req.dry_run = 1; break;
		case 'j': compact = 1; break;
		case 'b': batch = optarg; break;
		}
	}
	if (opt < 0)
		return r->rc;
	if (!batch && optind >= argc)
		return cli_usage(r);
	if ((batch && optind < argc) || (!batch && argc - optind > 2))
		return cli_error("too many arguments; see 'toolgate call --help'");
	operands = argv + optind;
	noperands = argc - optind;
	return CLI_RUN;
}

int cmd_call_run(cli_run *r)
{
	tg_gate *g = r->g;
	req.cancel = &interrupted;
	catch_signals();
	if (batch) {
		r->done = reraise;   /* once the gate closed: end as the signal would have */
		return run_batch(g, batch, compact, &req);
	}
	char *text = NULL;
	req.tool = operands[0];
	if (noperands > 1) {
		const char *a = operands[1];
		if (a[0] == '@' || !strcmp(a, "-")) {
			size_t len;
			text = cli_read_input(a[0] == '@' ? a + 1 : "-", tg_gate_max_args_bytes(g), &len);
			if (!text)
				return 1;
			req.args = text;
			req.args_len = len ? len : 0;
			if (!len)
				req.args = "";
		} else {
			req.args = a;
		}
	}
	tg_result *res;
	tg_call(g, &req, &res);
	r->done = reraise;
	if (!compact && cli_tty(stdout))
		print_human(tg_result_json(res, 0));
	else
		puts(tg_result_json(res, !compact));
	int code = tg_status_exit_code(tg_result_status(res));
	if (tg_result_status(res) != TG_FAILED)
		interrupted = 0;   /* the call ended before the signal stopped it: its own code */
	tg_result_free(res);
	free(text);
	return code;
}
