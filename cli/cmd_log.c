/*
 * cmd_log.c — `toolgate log`: what the ledger holds — every call with its
 * status, and the events of each.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate log [options]\n\n"
	"Lists the calls in the ledger, oldest first, each with its events.\n\n"
	"options:\n"
	"  --tool NAME          only calls of this tool\n"
	"  --status STATUS      only calls that ended with this status\n"
	"  --since WHEN         only calls since: 30s, 10m, 2h, 1d, or 2026-11-30[T12:00:00Z]\n"
	"  --op ID              one call\n"
	"  --limit N            at most N calls (the newest N)\n"
	"  --json               one JSON object per call (with \"events\"), one per line\n"
	CLI_GATE_OPTIONS_HELP;

static int parse_since(const char *s, long long *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end != s && *end && !end[1]) {
		double mult = *end == 's' ? 1 : *end == 'm' ? 60 : *end == 'h' ? 3600
		            : *end == 'd'  ? 86400 : 0;
		if (mult > 0 && v >= 0) {
			*out = (long long)time(NULL) * 1000 - (long long)(v * mult * 1000);
			return 0;
		}
	}
	struct tm tm;
	memset(&tm, 0, sizeof tm);
	const char *rest = strptime(s, "%Y-%m-%d", &tm);
	if (rest && *rest == 'T')
		rest = strptime(rest + 1, "%H:%M:%S", &tm);
	if (!rest || (*rest && strcmp(rest, "Z")))
		return -1;
	*out = (long long)timegm(&tm) * 1000;
	return 0;
}

static void print_human(json_t *op)
{
	json_t *env = json_object_get(op, "envelope");
	json_t *err = json_object_get(env, "error");
	const char *principal = json_string_value(json_object_get(op, "principal"));
	printf("%s  %-9s %-16s %-10s op %s\n", json_string_value(json_object_get(op, "started")),
	       json_string_value(json_object_get(op, "status")),
	       json_string_value(json_object_get(op, "tool")), principal ? principal : "-",
	       json_string_value(json_object_get(op, "op_id")));
	if (json_is_object(err))
		printf("    %s: %s\n", json_string_value(json_object_get(err, "kind")),
		       json_string_value(json_object_get(err, "message")));
	size_t i;
	json_t *ev;
	json_array_foreach(json_object_get(op, "events"), i, ev) {
		const char *ts = json_string_value(json_object_get(ev, "ts"));
		printf("    %s  %s\n", ts && strlen(ts) > 11 ? ts + 11 : "",
		       json_string_value(json_object_get(ev, "type")));
	}
}

int cmd_log(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"tool", 1, 0, 't'}, {"status", 1, 0, 's'}, {"since", 1, 0, 'S'},
		{"op", 1, 0, 'o'},   {"limit", 1, 0, 'l'},  {"json", 0, 0, 'j'},
		{"help", 0, 0, 'h'}, CLI_GATE_LONGOPTS,    {0, 0, 0, 0},
	};
	cli_gate_opts go;
	tg_log_query q = {0};
	int as_json = 0, opt;
	cli_gate_opts_init(&go);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 't': q.tool = optarg; break;
		case 's':
			for (int i = 0; i <= TG_STATUS__COUNT; i++) {
				if (i == TG_STATUS__COUNT)
					return cli_error("unknown status \"%s\"", optarg);
				if (!strcmp(tg_status_name((tg_status)i), optarg))
					break;
			}
			q.status = optarg;
			break;
		case 'S':
			if (parse_since(optarg, &q.since_ms) < 0)
				return cli_error("--since: expected 30s, 10m, 2h, 1d or a date, got \"%s\"",
				                 optarg);
			break;
		case 'o': q.op_id = optarg; break;
		case 'l': q.limit = (size_t)strtoul(optarg, NULL, 10); break;
		case 'j': as_json = 1; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default:
			if (cli_gate_opt(&go, opt, optarg) == 1)
				break;
			fputs(usage_text, stderr);
			return 1;
		}
	}
	tg_gate *g = cli_gate_open(&go);
	if (!g)
		return 1;
	char *err = NULL;
	char *text = tg_log(g, &q, &err);
	tg_gate_close(g);
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
