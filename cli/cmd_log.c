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
#include "gate.h"
#include "util/util.h"

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

static int parse_since(const char *s, int64_t *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end != s && *end && !end[1]) {
		double mult = *end == 's' ? 1 : *end == 'm' ? 60 : *end == 'h' ? 3600
		            : *end == 'd'  ? 86400 : 0;
		if (mult > 0 && v >= 0) {
			*out = tgi_unix_ms() - (int64_t)(v * mult * 1000);
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
	*out = (int64_t)timegm(&tm) * 1000;
	return 0;
}

static void print_human(json_t *op, json_t *events)
{
	json_t *env = json_object_get(op, "envelope");
	json_t *err = json_object_get(env, "error");
	const char *principal = json_string_value(json_object_get(op, "principal"));
	printf("%s  %-9s %-16s %-10s op %s\n", json_string_value(json_object_get(op, "started")),
	       json_string_value(json_object_get(op, "status")),
	       json_string_value(json_object_get(op, "tool")), principal ? principal : "-",
	       json_string_value(json_object_get(op, "op_id")));
	if (json_is_object(err)) {
		char msg[300];
		tgi_sanitize(msg, sizeof msg, json_string_value(json_object_get(err, "message")));
		printf("    %s: %s\n", json_string_value(json_object_get(err, "kind")), msg);
	}
	size_t i;
	json_t *ev;
	const char *op_id = json_string_value(json_object_get(op, "op_id"));
	json_array_foreach(events, i, ev) {
		if (strcmp(json_string_value(json_object_get(ev, "op_id")), op_id))
			continue;
		const char *ts = json_string_value(json_object_get(ev, "ts"));
		printf("    %s  %s\n", ts ? ts + 11 : "", json_string_value(json_object_get(ev, "type")));
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
	tgi_log_filter f = {0};
	int as_json = 0, opt;
	cli_gate_opts_init(&go);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 't': f.tool = optarg; break;
		case 's':
			for (int i = 0; i <= TG_STATUS__COUNT; i++) {
				if (i == TG_STATUS__COUNT)
					return cli_error("unknown status \"%s\"", optarg);
				if (!strcmp(tg_status_name((tg_status)i), optarg))
					break;
			}
			f.status = optarg;
			break;
		case 'S':
			if (parse_since(optarg, &f.since_ms) < 0)
				return cli_error("--since: expected 30s, 10m, 2h, 1d or a date, got \"%s\"",
				                 optarg);
			break;
		case 'o': f.op_id = optarg; break;
		case 'l': f.limit = (size_t)strtoul(optarg, NULL, 10); break;
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
	char err[512];
	json_t *ops = NULL, *events = NULL;
	int code = 0;
	tgi_store_lock(g);
	if (tgi_store_ops(g->store, &f, &ops, err, sizeof err) < 0 ||
	    tgi_store_events(g->store, &f, 0, &events, err, sizeof err) < 0)
		code = cli_error("%s", err);
	tgi_store_unlock(g);
	size_t i;
	json_t *op;
	if (!code) {
		json_array_foreach(ops, i, op) {
			if (as_json) {
				json_t *mine = json_array();
				size_t j;
				json_t *ev;
				json_array_foreach(events, j, ev)
					if (json_equal(json_object_get(ev, "op_id"), json_object_get(op, "op_id")))
						json_array_append(mine, ev);
				json_object_set_new(op, "events", mine);
				char *s = json_dumps(op, JSON_COMPACT);
				puts(s);
				free(s);
			} else {
				print_human(op, events);
			}
		}
	}
	json_decref(ops);
	json_decref(events);
	tg_gate_close(g);
	return code;
}
