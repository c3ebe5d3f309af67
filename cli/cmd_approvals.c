/*
 * cmd_approvals.c — `toolgate approvals list|approve ID|deny ID`.
 *
 * An approval is single-use, bound to sha256(tool + canonical args) and
 * the principal, and expires; approving lets the same call run once when
 * it is retried.  A decision is recorded with who made it ($USER) and,
 * with --reason, why: a denied call is told the reason.
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
	"options:\n"
	"  --all                every approval, not only the open ones\n"
	"  --json               JSON output\n"
	"  --reason TEXT        why (recorded; a denied call is told it; at most 500 bytes)\n"
	CLI_GATE_OPTIONS_HELP;

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

int cmd_approvals(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"all", 0, 0, 'A'}, {"json", 0, 0, 'j'}, {"reason", 1, 0, 'r'},
		{"help", 0, 0, 'h'}, CLI_GATE_LONGOPTS,  {0, 0, 0, 0},
	};
	cli_gate_opts go;
	const char *reason = NULL;
	int all = 0, as_json = 0, opt;
	cli_gate_opts_init(&go);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'A': all = 1; break;
		case 'j': as_json = 1; break;
		case 'r': reason = optarg; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default:
			if (cli_gate_opt(&go, opt, optarg) == 1)
				break;
			fputs(usage_text, stderr);
			return 1;
		}
	}
	const char *verb = optind < argc ? argv[optind] : "list";
	int decide = !strcmp(verb, "approve") ? 1 : !strcmp(verb, "deny") ? 0 : -1;
	if (decide < 0 && strcmp(verb, "list"))
		return cli_error("approvals: unknown action '%s'; expected list, approve or deny", verb);
	if (decide >= 0 && optind + 2 != argc)
		return cli_error("approvals %s: expected one approval id", verb);
	if (decide < 0 && reason)
		return cli_error("approvals list: --reason goes with approve or deny");

	go.o.no_create = 1;           /* an approval to decide is in a ledger that is there */
	tg_gate *g = cli_gate_open(&go);
	if (!g)
		return 1;
	int code = 0;
	if (decide < 0) {
		code = list(g, all, as_json);
	} else {
		char *err = NULL;
		const char *by = getenv("USER") ? getenv("USER") : "operator";
		cli_no_ledger(g);         /* said before "no approval ID" */
		if (tg_approval_decide(g, argv[optind + 1], decide, by, reason, &err) < 0)
			code = cli_error("%s", err ? err : "cannot decide the approval");
		else
			printf("%s %s\n", decide ? "approved" : "denied", argv[optind + 1]);
		free(err);
	}
	tg_gate_close(g);
	return code;
}
