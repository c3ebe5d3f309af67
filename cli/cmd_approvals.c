/*
 * cmd_approvals.c — `toolgate approvals list|approve ID|deny ID`.
 *
 * An approval is single-use, bound to sha256(tool + canonical args) and
 * the principal, and expires; approving lets the same call run once when
 * it is retried.  A decision is recorded with who made it ($USER) and,
 * with --reason, why: a denied call is told the reason.  An approval is
 * named by its id or, as git names commits, by a unique prefix of it (at
 * least 4 characters) among the open ones.  list shows, on a terminal,
 * each approval with its plan (a diff in colour, a command's argv and
 * sandbox); to a pipe, the lines it always printed; with --json, JSON.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate approvals list [--all] [--json]\n"
	"       toolgate approvals approve ID [--reason TEXT]\n"
	"       toolgate approvals deny ID [--reason TEXT]\n\n"
	"ID is an approval's id or a unique prefix of it (4 characters or more).\n\n"
	"options:\n"
	"  --all                every approval, not only the open ones\n"
	"  --json               JSON output\n"
	"  --reason TEXT        why (recorded; a denied call is told it; at most 500 bytes)\n"
	CLI_COLOR_HELP CLI_GATE_OPTIONS_HELP;

#define PREFIX_MIN 4

/* The approval id that id names among the approvals of text (a JSON array):
 * itself, or the one id starts with (*n: how many matched), into out. */
static int matches(const char *text, const char *id, char *out, size_t cap, json_t *found)
{
	json_t *arr = json_loads(text, 0, NULL), *a;
	size_t i, n = 0, len = strlen(id);
	json_array_foreach(arr, i, a) {
		const char *aid = json_string_value(json_object_get(a, "id"));
		if (!aid || strncmp(aid, id, len))
			continue;
		if (!strcmp(aid, id)) {     /* the whole id: that one, whatever else matches */
			snprintf(out, cap, "%s", aid);
			json_decref(arr);
			return 1;
		}
		if (!n++)
			snprintf(out, cap, "%s", aid);
		json_array_append(found, a);
	}
	json_decref(arr);
	return (int)n;
}

/* The whole id of the approval id names: itself when no approval starts
 * with it (the gate then says there is none), the one open approval (else
 * the one approval) it is a prefix of, or -1 (said, with the candidates)
 * when it is the prefix of several. */
static int resolve(tg_gate *g, const char *id, char *out, size_t cap)
{
	snprintf(out, cap, "%s", id);
	if (strlen(id) < PREFIX_MIN)
		return 0;
	for (int all = 0; all <= 1; all++) {
		char *err = NULL, *text = tg_approvals(g, all, &err);
		free(err);
		if (!text)
			return 0;
		json_t *found = json_array();
		int n = matches(text, id, out, cap, found);
		free(text);
		if (n > 1) {
			size_t i;
			json_t *a;
			cli_error("approval id prefix \"%s\" is ambiguous; it names %d%s approvals:", id,
			          n, all ? "" : " open");
			json_array_foreach(found, i, a) {   /* ledger text: through cli_paint */
				static const char *const keys[] = {"id", "state", "tool"};
				for (size_t k = 0; k < 3; k++) {
					fputs("  ", stderr);
					cli_paint(stderr, "", json_string_value(json_object_get(a, keys[k])));
				}
				fputc('\n', stderr);
			}
			json_decref(found);
			return -1;
		}
		json_decref(found);
		if (n == 1)
			return 0;
	}
	snprintf(out, cap, "%s", id);
	return 0;
}

/* One approval on a terminal: its id, state, tool, who and why, then what
 * the call would do (its plan; the arguments when it has none), then how
 * to decide it. */
static void print_human(json_t *a)
{
	const char *id = json_string_value(json_object_get(a, "id"));
	const char *state = json_string_value(json_object_get(a, "state"));
	cli_paint(stdout, "1", id);
	fputs("  ", stdout);
	cli_status(stdout, state, 8);
	putchar(' ');
	cli_paint(stdout, "1", json_string_value(json_object_get(a, "tool")));
	fputs("  by ", stdout);
	cli_paint(stdout, "", json_string_value(json_object_get(a, "principal")));
	fputs(" (", stdout);
	cli_paint(stdout, "", json_string_value(json_object_get(a, "reason")));
	fputs("); expires ", stdout);
	cli_paint(stdout, "", json_string_value(json_object_get(a, "expires")));
	putchar('\n');
	json_t *plan = json_object_get(a, "plan");
	if (json_is_object(plan)) {
		cli_plan(stdout, plan);
	} else {
		const char *args = json_string_value(json_object_get(a, "args"));
		fputs("  arguments: ", stdout);
		cli_paint(stdout, "", args ? args : "{}");
		putchar('\n');
	}
	const char *when = json_string_value(json_object_get(a, "decided"));
	const char *by = json_string_value(json_object_get(a, "decided_by"));
	const char *why = json_string_value(json_object_get(a, "decided_reason"));
	if (when) {
		fputs("  decided by ", stdout);
		cli_paint(stdout, "", by ? by : "?");
		fputs(" at ", stdout);
		cli_paint(stdout, "", when);
		if (why) {
			fputs(": ", stdout);
			cli_paint(stdout, "", why);
		}
		putchar('\n');
	} else if (state && !strcmp(state, "pending")) {
		printf("  toolgate approvals approve|deny %s [--reason TEXT]\n", id);
	}
}

static int list(tg_gate *g, int all, int as_json)
{
	char *err = NULL;
	cli_no_ledger(g);             /* said; the list is an empty ledger's */
	char *text = tg_approvals(g, all, &err);
	if (!text) {
		cli_error("%s", err ? err : "cannot list approvals");
		free(err);
		return 1;
	}
	if (as_json) {
		json_t *arr = json_loads(text, 0, NULL);
		char *s = json_dumps(arr, JSON_INDENT(2));
		puts(s);
		free(s);
		json_decref(arr);
		free(text);
		return 0;
	}
	json_t *arr = json_loads(text, 0, NULL);
	free(text);
	size_t i;
	json_t *a;
	if (cli_tty(stdout)) {
		json_array_foreach(arr, i, a) {
			if (i)
				putchar('\n');
			print_human(a);
		}
		if (!json_array_size(arr))
			puts(all ? "no approvals" : "no open approvals");
		json_decref(arr);
		return 0;
	}
	json_array_foreach(arr, i, a) {
		const char *args = json_string_value(json_object_get(a, "args"));
		printf("%s  %-8s %s %.200s  (by %s; expires %s)\n    %s\n",
		       json_string_value(json_object_get(a, "id")),
		       json_string_value(json_object_get(a, "state")),
		       json_string_value(json_object_get(a, "tool")), args ? args : "",
		       json_string_value(json_object_get(a, "principal")),
		       json_string_value(json_object_get(a, "expires")),
		       json_string_value(json_object_get(a, "reason")));
		const char *when = json_string_value(json_object_get(a, "decided"));
		const char *by = json_string_value(json_object_get(a, "decided_by"));
		const char *why = json_string_value(json_object_get(a, "decided_reason"));
		if (when)
			printf("    decided by %s at %s%s%s\n", by ? by : "?", when, why ? ": " : "",
			       why ? why : "");
	}
	if (!json_array_size(arr))
		puts("no open approvals");
	json_decref(arr);
	return 0;
}

static const char *reason;        /* --reason */
static int         all, as_json;  /* --all, --json */
static int         decide;        /* 1 approve, 0 deny, -1 list */
static const char *which;         /* approve|deny ID: the id or a unique prefix of it */

int cmd_approvals(cli_run *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"all", 0, 0, 'A'}, {"json", 0, 0, 'j'}, {"reason", 1, 0, 'r'},
		{"help", 0, 0, 'h'}, CLI_COLOR_LONGOPT,  CLI_GATE_LONGOPTS, {0, 0, 0, 0},
	};
	int opt;
	r->usage = usage_text;
	while ((opt = cli_getopt(r, argc, argv, "h", longopts)) > 0) {
		switch (opt) {
		case 'A': all = 1; break;
		case 'j': as_json = 1; break;
		case 'r': reason = optarg; break;
		}
	}
	if (opt < 0)
		return r->rc;
	const char *verb = optind < argc ? argv[optind] : "list";
	decide = !strcmp(verb, "approve") ? 1 : !strcmp(verb, "deny") ? 0 : -1;
	if (decide < 0 && strcmp(verb, "list"))
		return cli_error("approvals: unknown action '%s'; expected list, approve or deny", verb);
	if (decide >= 0 && optind + 2 != argc)
		return cli_error("approvals %s: expected one approval id", verb);
	if (decide < 0 && reason)
		return cli_error("approvals list: --reason goes with approve or deny");
	r->go.o.foreign_ok = decide < 0; /* a foreign ledger's may be listed, never decided */
	which = decide < 0 ? NULL : argv[optind + 1];
	return CLI_RUN;
}

int cmd_approvals_run(cli_run *r)
{
	if (decide < 0)
		return list(r->g, all, as_json);
	char *err = NULL, id[128];
	const char *by = getenv("USER") ? getenv("USER") : "operator";
	int code = 0;
	cli_no_ledger(r->g);          /* said before "no approval ID" */
	if (resolve(r->g, which, id, sizeof id) < 0)
		code = 1;
	else if (tg_approval_decide(r->g, id, decide, by, reason, &err) < 0)
		code = cli_error("%s", err ? err : "cannot decide the approval");
	else
		printf("%s %s\n", decide ? "approved" : "denied", id);
	free(err);
	return code;
}
