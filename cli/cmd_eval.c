/*
 * cmd_eval.c — `toolgate eval [FILES...] [--provider P] [--model M] ...`:
 * the tools tested against a model (tg_eval); `--history` the runs kept in
 * the ledger (tg_eval_history); `--sizes` the definitions' size per
 * profile (tg_eval_sizes).
 * Exit 0 when the suite ran (and every threshold held), 2 when a threshold
 * failed, 1 for a usage, configuration, eval file or provider error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage_text[] =
	"usage: toolgate eval [FILES...] [--provider P] [--model M] [--base-url URL]\n"
	"                     [--script FILE] [--runs N] [--jobs N] [--timeout S] [--profile P]\n"
	"                     [--as P] [--format table|json|junit] [--output FILE] [--no-record]\n"
	"                     [--compare OTHER_CONFIG] [--fail-under X] [--max-drop X] [options]\n"
	"       toolgate eval --history [--model M] [--limit N] [--format table|json]\n"
	"       toolgate eval --sizes [--format table|json] [options]\n\n"
	"Sends each eval case's request to the model with the tool definitions (first turn\n"
	"only) and judges the call that comes back as a dry run: nothing is executed. Scores\n"
	"per tool and overall: the right tool, valid arguments, arguments matching the\n"
	"expected ones, decided as expected by policy, and pass (all of them). Without FILES,\n"
	"the built-in suite of the built-in tools. Each run is kept in the ledger.\n\n"
	"  --provider P         scripted (answers from --script) | openai-chat |\n"
	"                       openai-responses | anthropic | gemini (keys from the environment)\n"
	"  --model M            the provider's model (default: the provider's own)\n"
	"  --base-url URL       an OpenAI-compatible server or a proxy\n"
	"  --script FILE        scripted: one answer per case and run, in order\n"
	"  --runs N             ask each case N times (default 1)\n"
	"  --jobs N             requests at once (default 4; scripted: 1)\n"
	"  --timeout S          one request to the model, in seconds (default 60)\n"
	"  --as P               the principal the calls are judged as\n"
	"  --format F           table (default) | json | junit\n"
	"  --output FILE        write the report to FILE instead of stdout\n"
	"  --no-record          do not keep the run in the ledger\n"
	"  --compare CONFIG     run the suite again on CONFIG (the baseline) and show the\n"
	"                       per-tool difference\n"
	"  --fail-under X       exit 2 when a pass rate (overall or a tool's) is under X (0..1)\n"
	"  --max-drop X         with --compare: exit 2 when a pass rate drops more than X\n"
	"  --history            the runs kept in the ledger, oldest first\n"
	"  --limit N            with --history: the newest N runs (default 20)\n"
	"  --sizes              the size of the definitions of every profile, per API\n\n"
	"The gate option --profile (below) also puts every case under that profile\n"
	"(without it: the case's own).\n\n"
	"options:\n" CLI_GATE_OPTIONS_HELP;

enum { OPT_SCRIPT = 2000, OPT_RUNS, OPT_JOBS, OPT_FORMAT, OPT_OUTPUT, OPT_NO_RECORD,
       OPT_COMPARE, OPT_FAIL_UNDER, OPT_MAX_DROP, OPT_HISTORY, OPT_LIMIT, OPT_SIZES,
       OPT_TIMEOUT };

/* The first SIGINT or SIGTERM stops the asking (the requests in flight
 * finish, the scratch workspace is removed); a second one ends the process. */
static volatile int stop;

static void on_signal(int sig)
{
	static const char msg[] = "\neval: stopping after the requests in flight "
	                          "(again to quit now)\n";
	stop = 1;
	if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
		/* nothing to do: the flag is what matters */
	}
	signal(sig, SIG_DFL);
}

static int parse_rate(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !(v >= 0 && v <= 1))
		return -1;
	*out = v;
	return 0;
}

static int parse_count(const char *s, int max, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || v < 1 || v > max)
		return -1;
	*out = (int)v;
	return 0;
}

/* requests answered so far, on a terminal */
static void show_progress(void *arg, size_t done, size_t total)
{
	(void)arg;
	fprintf(stderr, "\reval: %zu/%zu requests answered", done, total);
	if (done == total)
		fputs("\r\033[K", stderr);
	fflush(stderr);
}

/* The report goes to path whole or not at all: a temporary file beside it,
 * made before the run (a path that cannot be written is found before any
 * request is paid for), renamed over it at the end. */
static int open_output(const char *path, char tmp[PATH_MAX])
{
	if (snprintf(tmp, PATH_MAX, "%s.tmp.%ld", path, (long)getpid()) >= PATH_MAX) {
		cli_error("eval: --output: the path is too long");
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		cli_error("eval: cannot write \"%s\": %s", path, strerror(errno));
	return fd;
}

static int write_output(int fd, const char *tmp, const char *path, const char *text)
{
	size_t len = strlen(text), off = 0;
	int err = 0;
	while (off < len && !err) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno != EINTR)
			err = errno;
		else if (w > 0)
			off += (size_t)w;
	}
	if (!err && fsync(fd) < 0)
		err = errno;
	if (close(fd) < 0 && !err)
		err = errno;
	if (!err && rename(tmp, path) < 0)
		err = errno;
	if (err) {
		unlink(tmp);
		return cli_error("eval: cannot write \"%s\": %s", path, strerror(err));
	}
	return 0;
}

static tg_eval_options eo = {.fail_under = -1, .max_drop = -1};
static tg_options      judged;                   /* the cases' gates */
static const char     *output;                   /* --output FILE */
static int             history, sizes, limit;    /* --history, --sizes, --limit */
static char            tmp[PATH_MAX];            /* the report, until it is whole */
static int             ofd = -1;                 /* tmp open, or -1 */

/* A report that was not written: its temporary file goes. */
static void drop_output(void)
{
	if (ofd >= 0) {
		close(ofd);
		unlink(tmp);
	}
}

int cmd_eval(cli_run *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"provider", 1, 0, 'P'},       {"model", 1, 0, 'm'},
		{"base-url", 1, 0, 'u'},       {"script", 1, 0, OPT_SCRIPT},
		{"runs", 1, 0, OPT_RUNS},      {"jobs", 1, 0, OPT_JOBS},
		{"as", 1, 0, 'a'},             {"format", 1, 0, OPT_FORMAT},
		{"output", 1, 0, OPT_OUTPUT},  {"no-record", 0, 0, OPT_NO_RECORD},
		{"compare", 1, 0, OPT_COMPARE}, {"fail-under", 1, 0, OPT_FAIL_UNDER},
		{"max-drop", 1, 0, OPT_MAX_DROP}, {"history", 0, 0, OPT_HISTORY},
		{"limit", 1, 0, OPT_LIMIT},    {"sizes", 0, 0, OPT_SIZES},
		{"timeout", 1, 0, OPT_TIMEOUT},
		{"help", 0, 0, 'h'},           CLI_GATE_LONGOPTS, {0, 0, 0, 0},
	};
	int opt;
	r->usage = usage_text;
	while ((opt = cli_getopt(r, argc, argv, "h", longopts)) > 0) {
		switch (opt) {
		case 'P': eo.provider = optarg; break;
		case 'm': eo.model = optarg; break;
		case 'u': eo.base_url = optarg; break;
		case 'a': eo.principal = optarg; break;
		case OPT_SCRIPT: eo.script = optarg; break;
		case OPT_FORMAT: eo.format = optarg; break;
		case OPT_OUTPUT: output = optarg; break;
		case OPT_NO_RECORD: eo.no_record = 1; break;
		case OPT_COMPARE: eo.compare = optarg; break;
		case OPT_HISTORY: history = 1; break;
		case OPT_SIZES: sizes = 1; break;
		case OPT_RUNS:
			if (parse_count(optarg, 100, &eo.runs) < 0)
				return cli_error("eval: --runs takes a number from 1 to 100, not \"%s\"", optarg);
			break;
		case OPT_JOBS:
			if (parse_count(optarg, 32, &eo.jobs) < 0)
				return cli_error("eval: --jobs takes a number from 1 to 32, not \"%s\"", optarg);
			break;
		case OPT_LIMIT:
			if (parse_count(optarg, 100000, &limit) < 0)
				return cli_error("eval: --limit takes a number from 1 to 100000, not \"%s\"",
				                 optarg);
			break;
		case OPT_TIMEOUT: {
			char *end;
			errno = 0;
			eo.timeout_s = strtod(optarg, &end);
			if (end == optarg || *end || errno || !(eo.timeout_s >= 1 && eo.timeout_s <= 3600))
				return cli_error("eval: --timeout takes seconds from 1 to 3600, not \"%s\"",
				                 optarg);
			break;
		}
		case OPT_FAIL_UNDER:
			if (parse_rate(optarg, &eo.fail_under) < 0)
				return cli_error("eval: --fail-under takes a rate from 0 to 1, not \"%s\"", optarg);
			break;
		case OPT_MAX_DROP:
			if (parse_rate(optarg, &eo.max_drop) < 0)
				return cli_error("eval: --max-drop takes a rate from 0 to 1, not \"%s\"", optarg);
			break;
		}
	}
	if (opt < 0)
		return r->rc;
	if (history + sizes > 1)
		return cli_error("eval: --history and --sizes are separate views; give one");
	if ((history || sizes) && optind < argc)
		return cli_error("eval: --%s takes no eval files", history ? "history" : "sizes");
	if (eo.max_drop >= 0 && !eo.compare)
		return cli_error("eval: --max-drop needs --compare OTHER_CONFIG (the baseline)");
	if (eo.script && eo.provider && strcmp(eo.provider, "scripted"))
		return cli_error("eval: --script is for --provider scripted");
	eo.files = (const char *const *)(argv + optind);
	eo.nfiles = (size_t)(argc - optind);
	if (!history && !sizes && isatty(STDERR_FILENO))
		eo.progress = show_progress;

	eo.profile = r->go.o.profile;         /* every case's, and the gate's */
	/* the cases are judged on gates of their own; this one keeps the runs */
	judged = r->go.o;
	judged.bridge = 1;
	r->go.o.bridge = sizes;
	r->go.o.no_create = history || sizes;   /* they read; a run is kept in the ledger */
	r->go.o.foreign_ok = history;
	ofd = output ? open_output(output, tmp) : -1;
	if (output && ofd < 0)
		return 1;
	r->done = drop_output;
	return CLI_RUN;
}

int cmd_eval_run(cli_run *r)
{
	tg_gate *g = r->g;
	char *err = NULL, *text = NULL;
	int rc = 0;
	if (history) {
		cli_no_ledger(g);         /* said; the history is an empty ledger's */
		text = tg_eval_history(g, eo.model, limit, eo.format, &err);
	} else if (sizes) {
		text = tg_eval_sizes(g, eo.format, &err);
	} else {
		eo.cancel = &stop;
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		rc = tg_eval(g, &judged, &eo, &text, &err);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
	}
	if (rc >= 0 && text && err) {   /* the report is whole; the run was not kept */
		cli_error("eval: warning: %s", err);
		free(err);
		err = NULL;
	}
	if (rc < 0 || !text) {
		cli_error("eval: %s", err ? err : "failed");
		free(err);
		free(text);
		return 1;                 /* drop_output removes the report's file */
	}
	int wrc = 0;
	if (output) {
		wrc = write_output(ofd, tmp, output, text);
		ofd = -1;
	} else {
		fputs(text, stdout);
	}
	fflush(stdout);
	free(text);
	return wrc ? 1 : rc == 1 ? 2 : 0;
}
