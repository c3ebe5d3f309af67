/*
 * cmd_migrate.c — `toolgate migrate`: bring the ledger's schema up to date
 * (the gate also does it when it opens a ledger that is behind), or with
 * --dry-run say what that would do.  Only the ledger is opened, not a gate.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate migrate [--dry-run] [--to N] [--json] [--config FILE]\n\n"
	"Applies the ledger's schema migrations, each in its own transaction, and\n"
	"prints each one as \"migration N: <what it adds>\".  The ledger is the\n"
	"configuration's store: (a file, or a postgres:// URL), or $TOOLGATE_STORE.\n"
	"A ledger whose schema is newer than this toolgate is refused.\n\n"
	"A ledger from before version 7 that holds records has no identity: once\n"
	"migrated it is foreign (it may have arrived with a repository), and the\n"
	"gate refuses it until `toolgate ledger adopt` takes it on, after a look.\n\n"
	"options:\n"
	"  --dry-run            show the migrations that would be applied; change nothing\n"
	"                       (and create no ledger: without one, say so)\n"
	"  --to N               stop at schema version N (default: the newest)\n"
	"  --json               one JSON object: {store, where, from, to, latest, dry_run,\n"
	"                       migrations: [{n, title}], error, exists, foreign (why the\n"
	"                       ledger is foreign, or null)}\n"
	"  --config FILE        configuration (default: $TOOLGATE_CONFIG, else toolgate.yaml\n"
	"                       here or in the nearest directory above)\n";

struct run {
	int     as_json, dry_run;
	int     missing;   /* no ledger: an empty one in memory stands in (--dry-run) */
	json_t *applied;   /* [{n, title}] */
};

static void on_migration(void *arg, int n, const char *title)
{
	struct run *r = arg;
	if (!title)
		title = "";
	json_array_append_new(r->applied, json_pack("{s:i, s:s}", "n", n, "title", title));
	if (!r->as_json) {
		printf("migration %d: %s%s\n", n, title, r->dry_run ? " (not applied)" : "");
		fflush(stdout);
	}
}

/* --to N: 1 to the newest version. */
static int parse_to(const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < 1 || v > tg_ledger_latest())
		return -1;
	*out = (int)v;
	return 0;
}

static void print_json(tg_ledger *l, struct run *r, int from, int to, const char *error)
{
	json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:i, s:b, s:O}", "store", tg_ledger_kind(l),
	                      "where", tg_ledger_where(l), "from", from, "to", to, "latest",
	                      tg_ledger_latest(), "dry_run", r->dry_run, "migrations", r->applied);
	json_object_set_new(o, "error", error ? json_string(error) : json_null());
	json_object_set_new(o, "exists", json_boolean(!r->missing));
	const char *why = tg_ledger_foreign(l);
	json_object_set_new(o, "foreign", why ? json_string(why) : json_null());
	char *text = json_dumps(o, JSON_COMPACT);
	puts(text ? text : "{}");
	free(text);
	json_decref(o);
}

static int migrate(tg_ledger *l, struct run *r, int to)
{
	char *err = NULL;
	int from, now, code = 0;
	if (tg_ledger_version(l, &from, &err) < 0) {
		code = cli_error("%s", err);
		free(err);
		return code;
	}
	if (!r->as_json && !r->missing)
		printf("ledger %s %s: schema version %d\n", tg_ledger_kind(l), tg_ledger_where(l),
		       from);
	if (tg_ledger_migrate(l, to, r->dry_run, on_migration, r, &err) < 0) {
		/* what the ledger is at now: a failed migration left the one before it */
		char *again = NULL;
		if (tg_ledger_version(l, &now, &again) < 0)
			now = from;
		free(again);
		if (r->as_json)
			print_json(l, r, from, now, err);
		cli_error("%s", err);
		if (!r->as_json && now != from)
			printf("schema version now %d\n", now);
		free(err);
		return 1;
	}
	int target = to ? to : tg_ledger_latest();
	now = from;
	if (!r->dry_run && tg_ledger_version(l, &now, &err) < 0) {
		code = cli_error("%s", err);
		free(err);
		return code;
	}
	if (r->as_json) {
		print_json(l, r, from, r->dry_run ? target : now, NULL);
	} else if (!json_array_size(r->applied)) {
		printf("schema version %d is %s; nothing to do\n", from,
		       to ? "the one asked for" : "the newest");
	} else if (r->dry_run) {
		printf("would be at schema version %d; nothing was changed (--dry-run)\n", target);
	} else {
		printf("schema version now %d\n", now);
	}
	const char *why = tg_ledger_foreign(l);
	if (why && !r->as_json)
		fprintf(stderr, "toolgate: note: %s; until then the gate refuses it\n", why);
	return 0;
}

int cmd_migrate(cli_run *cr, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dry-run", 0, 0, 'n'}, {"to", 1, 0, 't'}, {"json", 0, 0, 'j'},
		{"config", 1, 0, 'c'},  {"help", 0, 0, 'h'}, {0, 0, 0, 0},
	};
	struct run r = {0};
	const char *config = NULL;
	int to = 0, opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n': r.dry_run = 1; break;
		case 't':
			if (parse_to(optarg, &to) < 0)
				return cli_error("--to: expected a schema version from 1 to %d, got \"%s\"",
				                 tg_ledger_latest(), optarg);
			break;
		case 'j': r.as_json = 1; break;
		case 'c': config = optarg; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default: fputs(usage_text, stderr); return 1;
		}
	}
	if (optind < argc)
		return cli_error("migrate: unexpected argument \"%s\"", argv[optind]);

	char *err = NULL;
	tg_ledger *l;
	int rc = tg_ledger_open(config, (r.dry_run ? TG_LEDGER_EXISTING : 0) | TG_LEDGER_FOREIGN_OK,
	                        &l, &err);
	if (rc > 0) {             /* --dry-run, and no ledger: say so, make none */
		r.missing = 1;
		if (!r.as_json)
			printf("%s: migrate would create it with these migrations\n", err);
		free(err);
		err = NULL;
	}
	if (rc < 0) {
		if (r.as_json) {
			json_t *o = json_pack("{s:s}", "error", err ? err : "cannot open the ledger");
			char *text = json_dumps(o, JSON_COMPACT);
			puts(text ? text : "{}");
			free(text);
			json_decref(o);
		}
		cli_error("%s", err ? err : "cannot open the ledger");
		free(err);
		return 1;
	}
	r.applied = json_array();
	int code = migrate(l, &r, to);
	json_decref(r.applied);
	tg_ledger_close(l);
	return code;
}
