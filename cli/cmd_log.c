/*
 * cmd_log.c — `toolgate log`: what the ledger holds — every call with its
 * status, and the events of each; with --follow, the events as they are
 * written, by this process or any other, until SIGINT or SIGTERM.
 */
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate log [options]\n"
	"       toolgate log --follow [--tool NAME] [--status STATUS] [--session ID] [--json]\n\n"
	"Lists the calls in the ledger, oldest first: when it started, its status, tool,\n"
	"principal, op id and session (an MCP client's session, an agent run's, --session),\n"
	"its error and its events.  With\n"
	"--follow, prints each event as it is written (by any toolgate process)\n"
	"until interrupted: \"HH:MM:SS.mmm  seq  type  tool  status  summary\" (UTC),\n"
	"or with --json one JSON object per event, as the events: sinks write them.\n\n"
	"options:\n"
	"  --tool NAME          only calls of this tool\n"
	"  --status STATUS      only calls that ended with this status\n"
	"  --session ID         only calls of this session\n"
	"  --since WHEN         only calls since: 30s, 10m, 2h, 1d, or 2026-11-30[T12:00:00Z]\n"
	"  --op ID              one call\n"
	"  --limit N            at most N calls (the newest N)\n"
	"  -f, --follow         print events as they are written, from now on\n"
	"  --json               one JSON object per line (a call with \"events\"; with\n"
	"                       --follow, an event)\n"
	CLI_COLOR_HELP CLI_GATE_OPTIONS_HELP;

/* Set by SIGINT/SIGTERM while following; read by tg_log_follow. */
static volatile int follow_stop;

static void on_signal(int sig)
{
	(void)sig;
	__atomic_store_n(&follow_stop, 1, __ATOMIC_RELEASE);
}

/* s into out with control characters as spaces (it came from the ledger):
 * C0, DEL, and C1 (U+0080..U+009F, UTF-8 C2 80..9F: U+009B starts a
 * terminal's control sequence as ESC [ does). */
static const char *clean(char *out, size_t cap, const char *s)
{
	size_t i = 0;
	for (; s && s[i] && i + 1 < cap; i++) {
		unsigned char c = (unsigned char)s[i], d = (unsigned char)s[i + 1];
		if (c == 0xc2 && d >= 0x80 && d <= 0x9f && i + 2 < cap) {
			out[i++] = ' ';
			out[i] = ' ';
		} else {
			out[i] = c < 0x20 || c == 0x7f ? ' ' : s[i];
		}
	}
	out[i] = '\0';
	return out;
}

static const char *str_or(json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : dflt;
}

/* One call: "started  status  tool  principal  op ID  session S" (the
 * session of an MCP client, an agent run, --session), its error, its
 * events.  What the ledger holds is shown, never obeyed (cli_text). */
static void print_human(json_t *op)
{
	json_t *env = json_object_get(op, "envelope");
	json_t *err = json_object_get(env, "error");
	char tool[160], principal[160];
	cli_paint(stdout, "", str_or(op, "started", "?"));
	fputs("  ", stdout);
	cli_status(stdout, str_or(op, "status", "?"), 9);
	printf(" %-16s %-10s op %s", clean(tool, sizeof tool, str_or(op, "tool", "?")),
	       clean(principal, sizeof principal, str_or(op, "principal", "-")),
	       str_or(op, "op_id", "?"));
	if (json_string_value(json_object_get(op, "session"))) {
		fputs("  session ", stdout);
		cli_paint(stdout, "", str_or(op, "session", ""));
	}
	putchar('\n');
	if (json_is_object(err)) {
		fputs("    ", stdout);
		cli_paint(stdout, "", str_or(err, "kind", "?"));
		fputs(": ", stdout);
		cli_paint(stdout, "", str_or(err, "message", ""));
		putchar('\n');
	}
	size_t i;
	json_t *ev;
	json_array_foreach(json_object_get(op, "events"), i, ev) {
		const char *ts = json_string_value(json_object_get(ev, "ts"));
		printf("    %s  ", ts && strlen(ts) > 11 ? ts + 11 : "");
		cli_paint(stdout, "", str_or(ev, "type", "?"));
		putchar('\n');
	}
}

/* One followed event: "HH:MM:SS.mmm  seq  type  tool  status  summary". */
static void print_event_human(const char *line)
{
	json_t *ev = json_loads(line, 0, NULL);
	if (!ev)
		return;
	const char *ts = str_or(ev, "ts", "");
	char hms[16] = "-";
	if (strlen(ts) >= 23)
		snprintf(hms, sizeof hms, "%.12s", ts + 11);
	char type[64], tool[160], status[32], summary[2048];
	printf("%s  %6lld  %-22s  %-16s  ", hms,
	       (long long)json_integer_value(json_object_get(ev, "seq")),
	       clean(type, sizeof type, str_or(ev, "type", "?")),
	       clean(tool, sizeof tool, str_or(ev, "tool", "-")));
	cli_status(stdout, clean(status, sizeof status, str_or(ev, "status", "-")), 9);
	printf("  %s\n", clean(summary, sizeof summary, str_or(ev, "summary", "")));
	json_decref(ev);
}

/* tg_log_follow's callback: nonzero (stop) when stdout is gone. */
static int on_event(void *arg, const char *line)
{
	if (*(const int *)arg)
		puts(line);
	else
		print_event_human(line);
	return fflush(stdout) != 0 || ferror(stdout);
}

/* No ledger yet (the gate holds an empty one): wait until a call makes
 * it, then follow it from its first event.  *g is reopened. */
static int await_ledger(tg_gate **g, cli_gate_opts *go, long long *after)
{
	char where[1024];
	int exists;
	tg_gate_ledger(*g, &exists, where, sizeof where);
	if (exists)
		return 0;
	fprintf(stderr, "toolgate: there is no ledger at '%s' yet; waiting for the first call\n",
	        where);
	while (!__atomic_load_n(&follow_stop, __ATOMIC_ACQUIRE) && access(where, F_OK) < 0)
		usleep(100 * 1000);
	tg_gate_close(*g);
	*g = NULL;
	if (__atomic_load_n(&follow_stop, __ATOMIC_ACQUIRE))
		return 1;
	*after = 0;
	*g = cli_gate_open(go);
	return *g ? 0 : -1;
}

static int follow(tg_gate **g, cli_gate_opts *go, const tg_log_query *q, int as_json)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;   /* no SA_RESTART: a wait ends at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);    /* a closed stdout is a write error, then a clean stop */
	char *err = NULL;
	long long after = -1;
	int waited = await_ledger(g, go, &after);
	if (waited)
		return waited < 0;
	int rc = tg_log_follow(*g, q, after, on_event, &as_json, &follow_stop, &err);
	if (rc < 0) {
		cli_error("%s", err ? err : "cannot read the ledger");
		free(err);
		return 1;
	}
	return 0;
}

static int list(tg_gate *g, const tg_log_query *q, int as_json)
{
	char *err = NULL;
	if (cli_no_ledger(g))
		return 0;
	char *text = tg_log(g, q, &err);
	if (!text) {
		cli_error("%s", err ? err : "cannot read the ledger");
		free(err);
		return 1;
	}
	json_t *ops = json_loads(text, 0, NULL);
	free(text);
	size_t i;
	json_t *op;
	json_array_foreach(ops, i, op) {
		if (as_json) {
			char *line = json_dumps(op, JSON_COMPACT | JSON_REAL_PRECISION(6));
			puts(line);
			free(line);
		} else {
			print_human(op);
		}
	}
	json_decref(ops);
	return 0;
}

/* --limit N: digits only, 1 or more, no overflow. */
static int parse_limit(const char *s, size_t *out)
{
	size_t n = 0;
	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || n > (SIZE_MAX - 9) / 10)
			return -1;
		n = n * 10 + (size_t)(*s - '0');
	}
	if (n == 0)
		return -1;
	*out = n;
	return 0;
}

static tg_log_query q;               /* --tool, --status, --session, --since, --op, --limit */
static int          as_json, following; /* --json, --follow */

int cmd_log(cli_run *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"tool", 1, 0, 't'}, {"status", 1, 0, 's'}, {"since", 1, 0, 'S'},
		{"op", 1, 0, 'o'},   {"limit", 1, 0, 'l'},  {"json", 0, 0, 'j'},
		{"session", 1, 0, 'e'}, {"follow", 0, 0, 'f'},
		{"help", 0, 0, 'h'}, CLI_COLOR_LONGOPT,    CLI_GATE_LONGOPTS,
		{0, 0, 0, 0},
	};
	int opt;
	const char *only_list = NULL;   /* an option --follow does not take */
	r->usage = usage_text;
	while ((opt = cli_getopt(r, argc, argv, "hf", longopts)) > 0) {
		switch (opt) {
		case 't': q.tool = optarg; break;
		case 's':
			for (int i = 0; i <= TG_STATUS__COUNT; i++) {
				if (i == TG_STATUS__COUNT) {
					char names[256] = "";
					for (int j = 0; j < TG_STATUS__COUNT; j++)
						snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
						         j ? ", " : "", tg_status_name((tg_status)j));
					return cli_error("unknown status \"%s\"; the statuses are %s", optarg,
					                 names);
				}
				if (!strcmp(tg_status_name((tg_status)i), optarg))
					break;
			}
			q.status = optarg;
			break;
		case 'e': q.session = optarg; break;
		case 'S':
			if (cli_parse_since(optarg, &q.since_ms) < 0)
				return cli_error("--since: expected 30s, 10m, 2h, 1d or a date, got \"%s\"",
				                 optarg);
			only_list = "--since";
			break;
		case 'o': q.op_id = optarg; only_list = "--op"; break;
		case 'l':
			if (parse_limit(optarg, &q.limit) < 0)
				return cli_error("--limit: expected a number of calls (1 or more), got \"%s\"",
				                 optarg);
			only_list = "--limit";
			break;
		case 'j': as_json = 1; break;
		case 'f': following = 1; break;
		}
	}
	if (opt < 0)
		return r->rc;
	if (optind < argc)
		return cli_error("log: unexpected argument \"%s\"", argv[optind]);
	if (following && only_list)
		return cli_error("--follow prints events from now on; %s does not apply (use toolgate "
		                 "log %s for what is already there)", only_list, only_list);
	return CLI_RUN;
}

int cmd_log_run(cli_run *r)
{
	return following ? follow(&r->g, &r->go, &q, as_json) : list(r->g, &q, as_json);
}
