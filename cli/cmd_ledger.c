/*
 * cmd_ledger.c — `toolgate ledger export|import`: move a ledger's history
 * to another ledger (SQLite to PostgreSQL, or back) as JSON lines; `toolgate
 * ledger adopt`: take on a foreign ledger.  Only the ledger is opened, not
 * a gate; the other ledger is named by $TOOLGATE_STORE or another
 * configuration.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate ledger export [--since WHEN] [--output FILE] [--config FILE]\n"
	"       toolgate ledger import [FILE|-] [--json] [--config FILE]\n"
	"       toolgate ledger adopt [--config FILE]\n\n"
	"Moves the ledger's history between ledgers (SQLite and PostgreSQL alike).\n"
	"export writes JSON lines: a header {\"toolgate_ledger\": 2, \"schema\", \"exported_at\",\n"
	"...}, one line per call with its events (oldest first), then one line per\n"
	"event that belongs to no call, of each unknown outcome of a call that left\n"
	"no row (its process died), and of each run of toolgate eval (oldest first).\n"
	"import writes them into the ledger (each call in one transaction; calls,\n"
	"events and eval runs already there are skipped, so running it twice imports\n"
	"nothing the second time), keeping replays working: a call whose\n"
	"idempotency key was done replays in the new ledger, one whose outcome was\n"
	"unknown stays unknown.  Approvals, pins, rate-limit buckets and agent\n"
	"conversations are not moved.\n\n"
	"adopt takes on a foreign ledger: one this machine's key did not make (it\n"
	"arrived with a repository, was copied from another workspace, was made\n"
	"before ledgers had an identity, or was written by someone with database\n"
	"access but not the fleet's key), which the gate refuses to open.  Look at\n"
	"it first (toolgate log reads it, with a warning).  It gets a new identity\n"
	"bound here under this machine's key; nothing in it is re-signed, so its\n"
	"approvals, idempotency claims, pins and rate-limit buckets carry no\n"
	"authority (an approval is asked again; a call it says was done is an\n"
	"unknown outcome for toolgate ops resolve); its history stays readable.\n"
	"export reads a foreign ledger too (with a warning); import refuses it.\n\n"
	"The ledger is the configuration's store: or $TOOLGATE_STORE, e.g.\n"
	"  toolgate ledger export --output history.jsonl\n"
	"  TOOLGATE_STORE=postgresql://gate@db/toolgate toolgate ledger import history.jsonl\n\n"
	"options:\n"
	"  --since WHEN         export: only calls since 30s, 10m, 2h, 1d, or\n"
	"                       2026-11-30[T12:00:00Z] (and events of no call and eval\n"
	"                       runs since then)\n"
	"  -o, --output FILE    export: write FILE (0600; replaced only when the export is\n"
	"                       complete) instead of stdout\n"
	"  --json               import: print {ops, events, claims, eval_runs, skipped,\n"
	"                       skipped_ops, skipped_events, skipped_claims,\n"
	"                       skipped_eval_runs, lines, error}\n"
	"  --config FILE        configuration (default: $TOOLGATE_CONFIG, else toolgate.yaml\n"
	"                       here or in the nearest directory above)\n";

static int write_line(void *arg, const char *line, size_t len)
{
	FILE *f = arg;
	return fwrite(line, 1, len, f) != len || fputc('\n', f) == EOF;
}

/* --output FILE: written to a temporary file beside it, renamed over it at
 * the end, so that a failed export never leaves a file that looks whole. */
static FILE *open_output(const char *path, char *tmp, size_t cap)
{
	if ((size_t)snprintf(tmp, cap, "%s.tmp-XXXXXX", path) >= cap) {
		cli_error("--output: the path is too long");
		return NULL;
	}
	int fd = mkostemp(tmp, O_CLOEXEC);   /* 0600: it holds call records */
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		cli_error("cannot write \"%s\": %s", path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
	}
	return f;
}

/* ", 3 eval runs" into out, or "" when there are none. */
static const char *eval_runs(char *out, size_t cap, size_t n)
{
	if (!n)
		return "";
	snprintf(out, cap, ", %zu eval run%s", n, n == 1 ? "" : "s");
	return out;
}

static int export(tg_ledger *l, long long since, const char *path)
{
	char tmp[PATH_MAX];
	FILE *f = path ? open_output(path, tmp, sizeof tmp) : stdout;
	if (!f)
		return 1;
	tg_ledger_counts c;
	char *err = NULL;
	errno = 0;
	int rc = tg_ledger_export(l, since, write_line, f, &c, &err);
	int werr = 0;   /* errno of the first write that failed */
	if (fflush(f) != 0 || ferror(f))
		werr = errno ? errno : EIO;
	if (path) {
		if (!werr && fsync(fileno(f)) != 0)
			werr = errno;
		if (fclose(f) != 0 && !werr)
			werr = errno;
		if (rc == 0 && !werr && rename(tmp, path) < 0)
			werr = errno;
		if (rc < 0 || werr)
			unlink(tmp);
	}
	if (werr) {
		free(err);
		return cli_error("cannot write the export to %s: %s", path ? path : "stdout",
		                 strerror(werr));
	}
	if (rc < 0) {
		cli_error("%s", err ? err : "the export failed");
		free(err);
		return 1;
	}
	FILE *say = path ? stdout : stderr;
	char runs[64];
	fprintf(say, "exported %zu ops, %zu events%s%s%s\n", c.ops, c.events,
	        eval_runs(runs, sizeof runs, c.eval_runs), path ? " to " : "", path ? path : "");
	if (c.claims)
		fprintf(say, "and %zu unknown outcome%s of calls that left no op\n", c.claims,
		        c.claims == 1 ? "" : "s");
	return 0;
}

static size_t skipped(const tg_ledger_counts *c)
{
	return c->skipped_ops + c->skipped_events + c->skipped_claims + c->skipped_eval_runs;
}

static void import_json(const tg_ledger_counts *c, const char *error)
{
	json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "ops",
	                      (json_int_t)c->ops, "events", (json_int_t)c->events, "claims",
	                      (json_int_t)c->claims, "eval_runs", (json_int_t)c->eval_runs,
	                      "skipped", (json_int_t)skipped(c), "skipped_ops",
	                      (json_int_t)c->skipped_ops, "skipped_events",
	                      (json_int_t)c->skipped_events, "skipped_claims",
	                      (json_int_t)c->skipped_claims, "skipped_eval_runs",
	                      (json_int_t)c->skipped_eval_runs, "lines", (json_int_t)c->lines);
	json_object_set_new(o, "error", error ? json_string(error) : json_null());
	char *text = json_dumps(o, JSON_COMPACT);
	puts(text ? text : "{}");
	free(text);
	json_decref(o);
}

static int adopt(tg_ledger *l)
{
	tg_ledger_adopted n;
	char *err = NULL;
	const char *was = tg_ledger_foreign(l);
	if (was)
		fprintf(stderr, "toolgate: %s\n", was);
	if (tg_ledger_adopt(l, &n, &err) < 0) {
		cli_error("%s", err ? err : "cannot adopt the ledger");
		free(err);
		return 1;
	}
	printf("adopted the ledger %s %s: it has a new identity, bound here under this machine's "
	       "key\n", tg_ledger_kind(l), tg_ledger_where(l));
	printf("nothing was re-signed: %zu approval%s, %zu idempotency claim%s, %zu pin%s and %zu "
	       "rate-limit bucket%s now carry no authority; its %zu calls and %zu events stay as "
	       "history\n",
	       n.approvals, n.approvals == 1 ? "" : "s", n.claims, n.claims == 1 ? "" : "s", n.pins,
	       n.pins == 1 ? "" : "s", n.buckets, n.buckets == 1 ? "" : "s", n.ops, n.events);
	return 0;
}

static int import(tg_ledger *l, const char *path, int as_json)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	if (fd < 0)
		return cli_error("cannot read \"%s\": %s", path, strerror(errno));
	tg_ledger_counts c;
	char *err = NULL, runs[64];
	int rc = tg_ledger_import(l, fd, &c, &err);
	if (fd != 0)
		close(fd);
	if (as_json)
		import_json(&c, rc < 0 ? (err ? err : "the import failed") : NULL);
	if (rc < 0) {
		cli_error("%s", err ? err : "the import failed");
		if (err && !strncmp(err, "line ", 5))   /* a line stopped it: how far it got */
			cli_error("imported %zu ops, %zu events%s before the error; skipped %zu already "
			          "present; nothing after it was written",
			          c.ops, c.events, eval_runs(runs, sizeof runs, c.eval_runs), skipped(&c));
		free(err);
		return 1;
	}
	if (as_json)
		return 0;
	printf("imported %zu ops, %zu events%s; skipped %zu already present\n", c.ops, c.events,
	       eval_runs(runs, sizeof runs, c.eval_runs), skipped(&c));
	if (c.claims)
		printf("and %zu unknown outcome%s of calls that left no op (never run again; "
		       "toolgate ops resolve settles them)\n", c.claims, c.claims == 1 ? "" : "s");
	return 0;
}

int cmd_ledger(cli_run *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"since", 1, 0, 'S'}, {"output", 1, 0, 'o'}, {"json", 0, 0, 'j'},
		{"config", 1, 0, 'c'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0},
	};
	const char *config = NULL, *output = NULL, *since_text = NULL;
	long long since = 0;
	int as_json = 0, opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'S':
			if (cli_parse_since(optarg, &since) < 0)
				return cli_error("--since: expected 30s, 10m, 2h, 1d or a date, got \"%s\"",
				                 optarg);
			since_text = optarg;
			break;
		case 'o': output = optarg; break;
		case 'j': as_json = 1; break;
		case 'c': config = optarg; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default: fputs(usage_text, stderr); return 1;
		}
	}
	const char *sub = optind < argc ? argv[optind] : NULL;
	int exporting = sub && !strcmp(sub, "export");
	int adopting = sub && !strcmp(sub, "adopt");
	if (!sub || (!exporting && !adopting && strcmp(sub, "import"))) {
		fputs(usage_text, stderr);
		return 1;
	}
	if (adopting) {
		if (optind + 1 < argc)
			return cli_error("ledger adopt: unexpected argument \"%s\"", argv[optind + 1]);
		if (output || since_text || as_json)
			return cli_error("ledger adopt: it takes only --config");
		char *err = NULL;
		tg_ledger *l;
		int rc = tg_ledger_open(config, TG_LEDGER_MIGRATE | TG_LEDGER_EXISTING |
		                                TG_LEDGER_FOREIGN_OK, &l, &err);
		if (rc != 0) {
			cli_error("%s%s", err ? err : "cannot open the ledger",
			          rc > 0 ? "; there is nothing to adopt" : "");
			free(err);
			tg_ledger_close(l);
			return 1;
		}
		int code = adopt(l);
		tg_ledger_close(l);
		return code;
	}
	const char *file = "-";
	if (exporting && optind + 1 < argc)
		return cli_error("ledger export: unexpected argument \"%s\"", argv[optind + 1]);
	if (!exporting && optind + 2 < argc)
		return cli_error("ledger import: unexpected argument \"%s\"", argv[optind + 2]);
	if (!exporting && optind + 1 < argc)
		file = argv[optind + 1];
	if (exporting && as_json)
		return cli_error("ledger export: --json is for import (an export is JSON already)");
	if (!exporting && (output || since_text))
		return cli_error("ledger import: %s is for export", output ? "--output" : "--since");

	char *err = NULL;
	tg_ledger *l;
	int rc = tg_ledger_open(config, TG_LEDGER_MIGRATE |
	                                (exporting ? TG_LEDGER_EXISTING | TG_LEDGER_FOREIGN_OK : 0),
	                        &l, &err);
	if (rc != 0) {
		cli_error("%s%s", err ? err : "cannot open the ledger",
		          rc > 0 ? "; nothing was exported" : "");
		free(err);
		tg_ledger_close(l);       /* the empty one that stood in (rc 1) */
		return 1;
	}
	if (exporting)
		cli_foreign_warning(tg_ledger_foreign(l));
	int code = exporting ? export(l, since, output) : import(l, file, as_json);
	tg_ledger_close(l);
	return code;
}
