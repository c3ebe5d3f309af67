/*
 * test_eval_run.c — tg_eval (src/eval/run.c) through the public API
 * against the fake model API (tests/fake_provider.c, started as a child on
 * an ephemeral port of 127.0.0.1), with four requests at once.
 *
 * The suite is tests/data/eval/unit.yaml; every request is answered with
 * the same call (the scenario tests/data/eval/http/same_read repeats), so
 * the scores are exact whatever order the requests are answered in.  Two
 * evals run at once on two gates from two threads (ThreadSanitizer runs
 * this test): each gets its exact scores, its progress callback sees every
 * request on its own thread, and only the run that asked to be kept is in
 * its ledger.  Also: the requests the fake provider got, a provider that
 * cannot be reached, and bad options.
 *
 * Owns: its fake server child, its workspaces.  Must not: reach the network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "toolgate.h"

#define RUNS      3
#define NCASES    4
#define REQUESTS  (RUNS * NCASES)

static char root[PATH_MAX];
static char fake_bin[PATH_MAX + 64];
static char suite_path[PATH_MAX + 64];
static char script_dir[PATH_MAX + 64];
static char scratch_dir[128];   /* $TMPDIR: where the evals make their scratch workspaces */

/* ---- the fake server ------------------------------------------------------- */

static struct {
	pid_t pid;
	int   port;
	char  dir[64];
	char  portfile[128];
	char  log[128];
} fake;

/* The fake provider beside this test's build (BUILD/tests/test_eval_run →
 * BUILD/fake_provider), else the ASan or optimised one (the ThreadSanitizer
 * build has none of its own).  1 when found. */
static int find_fake(void)
{
	static const char *const tries[] = {"../fake_provider", "../../asan/fake_provider",
	                                    "../../fake_provider"};
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	const char *dir = dirname(exe);
	for (size_t i = 0; i < sizeof tries / sizeof *tries; i++) {
		snprintf(fake_bin, sizeof fake_bin, "%s/%s", dir, tries[i]);
		if (access(fake_bin, X_OK) == 0)
			return 1;
	}
	return 0;
}

static int fake_start(void)
{
	snprintf(fake.dir, sizeof fake.dir, "/tmp/tg-evalfake-XXXXXX");
	if (!mkdtemp(fake.dir))
		return -1;
	snprintf(fake.portfile, sizeof fake.portfile, "%s/port", fake.dir);
	snprintf(fake.log, sizeof fake.log, "%s/requests.log", fake.dir);
	fake.pid = fork();
	if (fake.pid < 0)
		return -1;
	if (fake.pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execl(fake_bin, "fake_provider", fake.portfile, script_dir, fake.log, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		FILE *pf = fopen(fake.portfile, "r");
		if (pf) {
			int ok = fscanf(pf, "%d", &fake.port) == 1;
			fclose(pf);
			if (ok)
				return 0;
		}
		struct timespec ts = {0, 10 * 1000000L};
		nanosleep(&ts, NULL);
	}
	return -1;
}

static void fake_stop(void)
{
	char path[160];
	if (fake.pid > 0) {
		kill(fake.pid, SIGTERM);
		while (waitpid(fake.pid, NULL, 0) < 0 && errno == EINTR)
			;
		fake.pid = 0;
	}
	unlink(fake.portfile);
	unlink(fake.log);
	snprintf(path, sizeof path, "%s.tmp", fake.portfile);
	unlink(path);
	rmdir(scratch_dir);
	rmdir(fake.dir);
}

/* The requests the fake saw since the log was last emptied: an array of
 * their bodies (parsed). */
static json_t *fake_bodies(void)
{
	json_t *all = json_array();
	FILE *lf = fopen(fake.log, "r");
	char *line = NULL;
	size_t cap = 0;
	if (!lf)
		return all;
	while (getline(&line, &cap, lf) > 0) {
		json_t *v = json_loads(line, 0, NULL);
		assert_non_null(v);
		json_t *body = json_loads(json_string_value(json_object_get(v, "body")), 0, NULL);
		assert_non_null(body);
		json_array_append_new(all, body);
		json_decref(v);
	}
	free(line);
	fclose(lf);
	return all;
}

/* ---- workspaces ------------------------------------------------------------ */

/* How many entries dir holds. */
static int entries(const char *dir)
{
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", dir);
	return system(cmd) == 0 ? 0 : 1;
}

typedef struct space {
	char dir[64];
	char config[128];
} space;

static void space_make(space *s)
{
	snprintf(s->dir, sizeof s->dir, "/tmp/tg-evalrun-XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	snprintf(s->config, sizeof s->config, "%s/toolgate.yaml", s->dir);
	FILE *f = fopen(s->config, "w");
	assert_non_null(f);
	fputs("mode: default\napproval: on-request\n", f);
	fclose(f);
	/* the user's README: the suite's own is what the judge must see */
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/README.md", s->dir);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("# the user's README\n", f);
	fclose(f);
}

static void space_remove(space *s)
{
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
	assert_int_equal(system(cmd), 0);
}

/* ---- one eval on its own gate (run on a thread of its own) --------------- */

typedef struct job {
	space       ws;
	int         no_record;
	const char *base_url;
	/* what came back */
	int         rc;
	char       *out, *err;
	/* the progress callback: on which thread, how often, what it saw */
	pthread_t   self;
	int         wrong_thread, went_back;
	size_t      calls, last_done, last_total;
	/* the runs its ledger keeps afterwards (-1: could not be read) */
	long        kept;
} job;

static void on_progress(void *arg, size_t done, size_t total)
{
	job *j = arg;
	if (!pthread_equal(pthread_self(), j->self))
		j->wrong_thread = 1;
	if (done < j->last_done)
		j->went_back = 1;
	j->calls++;
	j->last_done = done;
	j->last_total = total;
}

static void *run_job(void *arg)
{
	job *j = arg;
	const char *files[] = {suite_path};
	tg_options go = {.config_path = j->ws.config, .workspace = j->ws.dir, .sync_full = 0};
	tg_eval_options eo = {
		.files = files, .nfiles = 1, .provider = "openai-chat", .model = "fake-model",
		.base_url = j->base_url, .runs = RUNS, .jobs = 4, .fail_under = -1, .max_drop = -1,
		.format = "json", .no_record = j->no_record, .progress = on_progress, .progress_arg = j,
	};
	tg_gate *g = NULL;
	j->self = pthread_self();
	j->kept = -1;
	if (tg_gate_open(&go, &g, &j->err) < 0) {
		j->rc = -2;
		return NULL;
	}
	j->rc = tg_eval(g, &go, &eo, &j->out, &j->err);
	char *herr = NULL, *h = tg_eval_history(g, NULL, 0, "json", &herr);
	json_t *rows = h ? json_loads(h, 0, NULL) : NULL;
	if (json_is_array(rows))
		j->kept = (long)json_array_size(rows);
	json_decref(rows);
	free(h);
	free(herr);
	tg_gate_close(g);
	return NULL;
}

/* ---- checks ------------------------------------------------------------------ */

/* A score's checks as "cases results tool valid args policy pass" (ok/of),
 * each rate checked against ok/of. */
static void expect_score(const json_t *s, const char *want)
{
	static const char *const checks[] = {"tool", "valid", "args", "policy", "pass"};
	char got[256];
	int n = snprintf(got, sizeof got, "%lld %lld",
	                 (long long)json_integer_value(json_object_get(s, "cases")),
	                 (long long)json_integer_value(json_object_get(s, "results")));
	for (size_t i = 0; i < 5; i++) {
		const json_t *c = json_object_get(s, checks[i]);
		json_int_t ok = json_integer_value(json_object_get(c, "ok"));
		json_int_t of = json_integer_value(json_object_get(c, "of"));
		const json_t *rate = json_object_get(c, "rate");
		n += snprintf(got + n, sizeof got - (size_t)n, " %lld/%lld", (long long)ok, (long long)of);
		if (of == 0)
			assert_true(json_is_null(rate));
		else
			/* the report prints rates with 15 significant digits */
			assert_true(json_is_number(rate) &&
			            fabs(json_number_value(rate) - (double)ok / (double)of) < 1e-12);
	}
	assert_string_equal(got, want);
}

/* The report's exact scores (unit.yaml, RUNS runs, every answer read_file
 * README.md): worked out in unit.yaml's comment. */
static void expect_report(const char *text)
{
	json_error_t je;
	json_t *rep = json_loads(text, 0, &je);
	if (!rep)
		fail_msg("the report is not JSON: %s", je.text);
	const json_t *scores = json_object_get(rep, "scores");
	const json_t *tools = json_object_get(scores, "tools");
	assert_int_equal(json_object_size(tools), 3);
	expect_score(json_object_get(tools, "read_file"), "2 6 6/6 6/6 3/6 6/6 3/6");
	expect_score(json_object_get(tools, "list_dir"), "1 3 0/3 0/3 0/3 0/3 0/3");
	expect_score(json_object_get(tools, "(none)"), "1 3 0/3 0/0 0/0 0/0 0/3");
	expect_score(json_object_get(scores, "overall"), "4 12 6/12 6/9 3/9 6/9 3/12");

	/* the results in case order, each case's runs together */
	const json_t *results = json_object_get(rep, "results");
	static const char *const order[NCASES] = {"readme", "other", "listing", "chat"};
	assert_int_equal(json_array_size(results), REQUESTS);
	for (size_t i = 0; i < REQUESTS; i++) {
		const json_t *r = json_array_get(results, i);
		assert_string_equal(json_string_value(json_object_get(r, "case")), order[i / RUNS]);
		assert_int_equal(json_integer_value(json_object_get(r, "run")), (json_int_t)(i % RUNS + 1));
		assert_true(json_is_null(json_object_get(r, "error")));
	}
	const json_t *f = json_object_get(json_array_get(results, RUNS), "failure");
	assert_string_equal(json_string_value(json_object_get(f, "check")), "args");
	assert_string_equal(json_string_value(json_object_get(f, "message")),
	                    "/path: expected \"other.md\", got \"README.md\"");
	f = json_object_get(json_array_get(results, 2 * RUNS), "failure");
	assert_string_equal(json_string_value(json_object_get(f, "message")),
	                    "called read_file, expected list_dir");
	f = json_object_get(json_array_get(results, 3 * RUNS), "failure");
	assert_string_equal(json_string_value(json_object_get(f, "message")),
	                    "called read_file, expected no tool call");
	assert_string_equal(json_string_value(json_object_get(rep, "provider")), "openai-chat");
	assert_string_equal(json_string_value(json_object_get(rep, "model")), "fake-model");
	assert_int_equal(json_integer_value(json_object_get(rep, "runs")), RUNS);
	json_decref(rep);
}

static void expect_job(const job *j)
{
	if (j->rc != 0)
		fail_msg("tg_eval: %d: %s", j->rc, j->err ? j->err : "(no message)");
	assert_non_null(j->out);
	expect_report(j->out);
	assert_false(j->wrong_thread);
	assert_false(j->went_back);
	assert_true(j->calls >= 1);
	assert_int_equal(j->last_done, REQUESTS);
	assert_int_equal(j->last_total, REQUESTS);
}

/* ---- the tests --------------------------------------------------------------- */

/* Two evals at once, each with four requests at once, on two gates. */
static void test_two_evals_at_once(void **state)
{
	(void)state;
	char base[96];
	snprintf(base, sizeof base, "http://127.0.0.1:%d/s/same_read", fake.port);
	if (truncate(fake.log, 0) < 0 && errno != ENOENT)
		fail_msg("cannot empty the fake's log: %s", strerror(errno));
	job jobs[2] = {{.no_record = 0, .base_url = base}, {.no_record = 1, .base_url = base}};
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		space_make(&jobs[i].ws);
		assert_int_equal(pthread_create(&th[i], NULL, run_job, &jobs[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	for (int i = 0; i < 2; i++)
		expect_job(&jobs[i]);
	/* kept when asked to be, and only then */
	assert_int_equal(jobs[0].kept, 1);
	assert_int_equal(jobs[1].kept, 0);

	/* what the fake provider was sent: each case's request as the one user
	 * message, the six coding tools with it, RUNS times per eval */
	json_t *bodies = fake_bodies();
	assert_int_equal(json_array_size(bodies), 2 * REQUESTS);
	static const char *const requests[NCASES] = {"Show me README.md", "Show me other.md",
	                                             "What is in this directory?", "hello!"};
	int seen[NCASES] = {0};
	size_t i;
	json_t *b;
	json_array_foreach(bodies, i, b) {
		const json_t *msgs = json_object_get(b, "messages");
		assert_int_equal(json_array_size(msgs), 1);
		const json_t *m = json_array_get(msgs, 0);
		assert_string_equal(json_string_value(json_object_get(m, "role")), "user");
		const char *content = json_string_value(json_object_get(m, "content"));
		assert_non_null(content);
		int found = 0;
		for (int k = 0; k < NCASES; k++)
			if (!strcmp(content, requests[k]))
				seen[k]++, found = 1;
		if (!found)
			fail_msg("a request the suite does not have: %s", content);
		assert_string_equal(json_string_value(json_object_get(b, "model")), "fake-model");
		const json_t *tools = json_object_get(b, "tools");
		assert_int_equal(json_array_size(tools), 6);
		int has_read = 0;
		size_t t;
		json_t *tool;
		json_array_foreach(tools, t, tool)
			has_read |= !strcmp(json_string_value(json_object_get(json_object_get(tool, "function"),
			                                                       "name")), "read_file");
		assert_true(has_read);
	}
	for (int k = 0; k < NCASES; k++)
		assert_int_equal(seen[k], 2 * RUNS);
	json_decref(bodies);

	/* the scratch workspaces are gone */
	assert_int_equal(entries(scratch_dir), 0);
	for (int k = 0; k < 2; k++) {
		/* nothing ran: the user's README is as it was, and no file was made */
		char p[PATH_MAX], text[64] = "";
		snprintf(p, sizeof p, "%s/README.md", jobs[k].ws.dir);
		FILE *f = fopen(p, "r");
		assert_non_null(f);
		assert_non_null(fgets(text, sizeof text, f));
		fclose(f);
		assert_string_equal(text, "# the user's README\n");
		snprintf(p, sizeof p, "%s/other.md", jobs[k].ws.dir);
		assert_int_equal(access(p, F_OK), -1);
		free(jobs[k].out);
		free(jobs[k].err);
		space_remove(&jobs[k].ws);
	}
}

/* Nothing listens there: -1, and the sentence says the model was not asked. */
static void test_unreachable(void **state)
{
	(void)state;
	job j = {.no_record = 1, .base_url = "http://127.0.0.1:1/v1"};
	space_make(&j.ws);
	run_job(&j);
	assert_int_equal(j.rc, -1);
	assert_null(j.out);
	assert_non_null(j.err);
	assert_non_null(strstr(j.err, "the model could not be asked"));
	free(j.err);
	space_remove(&j.ws);
}

/* Options that make no sense are refused before anything is asked. */
static void test_bad_options(void **state)
{
	(void)state;
	space s;
	space_make(&s);
	tg_options go = {.config_path = s.config, .workspace = s.dir, .sync_full = 0};
	tg_gate *g = NULL;
	char *err = NULL, *out = NULL;
	assert_int_equal(tg_gate_open(&go, &g, &err), 0);
	const char *files[] = {suite_path};
	tg_eval_options base = {.files = files, .nfiles = 1, .provider = "openai-chat",
	                        .base_url = "http://127.0.0.1:1/v1", .fail_under = -1,
	                        .max_drop = -1, .no_record = 1};
	struct { tg_eval_options o; const char *says; } bad[4];
	for (int i = 0; i < 4; i++)
		bad[i].o = base;
	bad[0].o.max_drop = 0.1, bad[0].says = "--compare";   /* a drop needs a baseline */
	bad[1].o.format = "xml", bad[1].says = "format";
	bad[2].o.runs = 1000, bad[2].says = "runs";
	bad[3].o.fail_under = 2, bad[3].says = "rate";
	for (int i = 0; i < 4; i++) {
		assert_int_equal(tg_eval(g, &go, &bad[i].o, &out, &err), -1);
		assert_null(out);
		assert_non_null(err);
		if (!strstr(err, bad[i].says))
			fail_msg("bad option %d: \"%s\" does not say %s", i, err, bad[i].says);
		free(err);
		err = NULL;
	}
	tg_gate_close(g);
	space_remove(&s);
}

static int setup(void **state)
{
	(void)state;
	const char *env = getenv("TOOLGATE_ROOT");
	if (!realpath(env && *env ? env : ".", root))
		return -1;
	snprintf(suite_path, sizeof suite_path, "%s/tests/data/eval/unit.yaml", root);
	snprintf(script_dir, sizeof script_dir, "%s/tests/data/eval/http", root);
	if (access(suite_path, R_OK) != 0) {
		fprintf(stderr, "%s: not there (run from the repository, or set TOOLGATE_ROOT)\n",
		        suite_path);
		return -1;
	}
	if (!find_fake()) {
		fprintf(stderr, "no fake provider beside the test (make builds build/asan/fake_provider)\n");
		return -1;
	}
	if (fake_start() < 0)
		return -1;
	snprintf(scratch_dir, sizeof scratch_dir, "%s/scratch", fake.dir);
	if (mkdir(scratch_dir, 0700) < 0)
		return -1;
	setenv("TMPDIR", scratch_dir, 1);
	setenv("OPENAI_API_KEY", "sk-test-eval-fake-0123456789", 1);
	unsetenv("TOOLGATE_CONFIG");
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fake_stop();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_evals_at_once),
		cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_bad_options),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
