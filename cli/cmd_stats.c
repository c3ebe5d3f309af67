/*
 * cmd_stats.c — `toolgate stats`: what the ledger says about the calls —
 * per tool, how many ended in each status and how long the ones that ran
 * took (p50/p99), and which rules denied how many.
 *
 * Owns: the table it prints.  Must not: compute the figures (tg_stats does).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

#define TOOL_COL_MAX 40 /* characters of a tool name shown in the table */

static const char usage_text[] =
	"usage: toolgate stats [options]\n\n"
	"Per tool: the calls, how many ended in each status, and the 50th and 99th\n"
	"percentiles of the duration of the calls whose tool ran (persisted, committed,\n"
	"failed); then the denials by the rule that denied them.\n\n"
	"options:\n"
	"  --since WHEN         only calls since: 30s, 10m, 2h, 1d, or 2026-11-30[T12:00:00Z]\n"
	"  --json               the figures as one JSON object\n"
	CLI_COLOR_HELP CLI_GATE_OPTIONS_HELP;

/* Print s, at most max bytes (not cutting a UTF-8 character), control
 * characters shown as '?' (the ledger holds what tools and models named);
 * pad to width. */
static void put_cell(const char *s, int width, int max)
{
	int len = (int)strnlen(s, (size_t)max + 1), n;
	if (len > max)
		for (len = max; len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80; len--)
			;
	for (n = 0; n < len; n++)
		putchar((unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n]);
	for (; n < width; n++)
		putchar(' ');
}

static void put_ms(json_t *v)
{
	if (json_is_number(v))
		printf("  %9.2f", json_number_value(v));
	else
		printf("  %9s", "-");
}

/* The statuses any tool has, in the order of tg_status, then any the
 * ledger holds that this toolgate does not know, in the order seen. */
static json_t *status_columns(json_t *tools)
{
	json_t *seen = json_object(), *cols = json_array();
	size_t i;
	json_t *t;
	const char *key;
	json_t *n;

	json_array_foreach(tools, i, t) {
		json_object_foreach(json_object_get(t, "by_status"), key, n)
			json_object_set_new(seen, key, json_true());
	}
	for (int st = 0; st < TG_STATUS__COUNT; st++) {
		const char *name = tg_status_name((tg_status)st);
		if (json_object_get(seen, name)) {
			json_array_append_new(cols, json_string(name));
			json_object_del(seen, name);
		}
	}
	json_object_foreach(seen, key, n)
		json_array_append_new(cols, json_string(key));
	json_decref(seen);
	return cols;
}

static void print_tools(json_t *tools)
{
	json_t *cols = status_columns(tools), *c, *t;
	size_t i, j;
	int w = 4;

	json_array_foreach(tools, i, t) {
		const char *name = json_string_value(json_object_get(t, "tool"));
		int len = (int)strlen(name ? name : "(none)");
		w = len > w ? (len < TOOL_COL_MAX ? len : TOOL_COL_MAX) : w;
	}
	put_cell("tool", w, w);
	printf("  %6s", "calls");
	json_array_foreach(cols, j, c) {   /* right-aligned, in the status's colour */
		const char *st = json_string_value(c);
		printf("  %*s", (int)strlen(st) < 6 ? 6 - (int)strlen(st) : 0, "");
		cli_status(stdout, st, 0);
	}
	printf("  %9s  %9s\n", "p50 ms", "p99 ms");
	json_array_foreach(tools, i, t) {
		const char *name = json_string_value(json_object_get(t, "tool"));
		json_t *by = json_object_get(t, "by_status");
		put_cell(name ? name : "(none)", w, TOOL_COL_MAX);
		printf("  %6lld", (long long)json_integer_value(json_object_get(t, "calls")));
		json_array_foreach(cols, j, c) {
			const char *st = json_string_value(c);
			printf("  %*lld", (int)strlen(st) < 6 ? 6 : (int)strlen(st),
			       (long long)json_integer_value(json_object_get(by, st)));
		}
		put_ms(json_object_get(t, "p50_ms"));
		put_ms(json_object_get(t, "p99_ms"));
		putchar('\n');
	}
	json_decref(cols);
}

/* A denial without a rule was stopped by something else (an unknown
 * principal, a hook, loop detection, a rate limit): named by its kind. */
static void print_denials(json_t *denials)
{
	size_t i;
	json_t *d;

	if (!json_array_size(denials)) {
		printf("\ndenials by rule: none\n");
		return;
	}
	printf("\ndenials by rule:\n");
	json_array_foreach(denials, i, d) {
		const char *rule = json_string_value(json_object_get(d, "rule"));
		const char *kind = json_string_value(json_object_get(d, "kind"));
		printf("  %6lld  ", (long long)json_integer_value(json_object_get(d, "count")));
		if (rule) {
			put_cell(rule, 0, 200);
		} else {
			printf("(no rule: ");
			put_cell(kind ? kind : "unknown", 0, 64);
			putchar(')');
		}
		putchar('\n');
	}
}

static void print_human(json_t *stats)
{
	const char *since = json_string_value(json_object_get(stats, "since"));
	long long calls = (long long)json_integer_value(json_object_get(stats, "calls"));
	json_t *tools = json_object_get(stats, "tools");

	if (since)
		printf("%lld call%s since %s\n", calls, calls == 1 ? "" : "s", since);
	else
		printf("%lld call%s\n", calls, calls == 1 ? "" : "s");
	if (json_array_size(tools)) {
		putchar('\n');
		print_tools(tools);
	}
	print_denials(json_object_get(stats, "denials"));
}

static long long since_ms;   /* --since */
static int       as_json;    /* --json */

int cmd_stats(cli_run *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"since", 1, 0, 'S'}, {"json", 0, 0, 'j'}, {"help", 0, 0, 'h'},
		CLI_COLOR_LONGOPT,    CLI_GATE_LONGOPTS,    {0, 0, 0, 0},
	};
	int opt;
	r->usage = usage_text;
	while ((opt = cli_getopt(r, argc, argv, "h", longopts)) > 0) {
		switch (opt) {
		case 'S':
			if (cli_parse_since(optarg, &since_ms) < 0)
				return cli_error("--since: expected 30s, 10m, 2h, 1d or a date, got \"%s\"",
				                 optarg);
			break;
		case 'j': as_json = 1; break;
		}
	}
	if (opt < 0)
		return r->rc;
	if (optind != argc)
		return cli_usage(r);
	return CLI_RUN;
}

int cmd_stats_run(cli_run *r)
{
	char *err = NULL;
	cli_no_ledger(r->g);          /* said; the figures are those of an empty ledger */
	char *text = tg_stats(r->g, since_ms, &err);
	if (!text) {
		cli_error("%s", err ? err : "cannot read the ledger");
		free(err);
		return 1;
	}
	if (as_json) {
		puts(text);
		free(text);
		return 0;
	}
	json_t *stats = json_loads(text, 0, NULL);
	free(text);
	if (!stats)
		return cli_error("cannot read the figures the gate gave");
	print_human(stats);
	json_decref(stats);
	return 0;
}
