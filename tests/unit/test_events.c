/*
 * test_events.c — the event sinks (src/record/events.c) and tg_log_follow
 * (src/admin/follow.c): the `events:` section refused with file:line when it is
 * wrong; JSONL lines whole and parseable when two sinks (two gates, two
 * processes) share the file; every event to every socket subscriber; a
 * subscriber that never reads dropped with a last "sink.dropped" line
 * while another keeps up, and emitting never waits for it; a stale socket
 * replaced, a live one left to its owner, a regular file never removed;
 * the lines of a call (shape, seq, redaction); following the ledger from
 * another gate, with filters, stopping on *stop.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "gate/gate.h"
#include "mw/mw.h"
#include "toolgate.h"
#include "util/util.h"

static char ws[64];

static int setup(void **state)
{
	(void)state;
	strcpy(ws, "/tmp/tg-events.XXXXXX");
	assert_non_null(mkdtemp(ws));
	unsetenv("TOOLGATE_CONFIG");
	unsetenv("TOOLGATE_PRINCIPAL");
	unsetenv("TOOLGATE_TOKEN");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
	return system(cmd);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void wpath(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", ws, name);
}

static void write_file(const char *name, const char *text)
{
	char p[256];
	wpath(p, sizeof p, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The configuration "workspace: WS" + body, loaded from WS/toolgate.yaml;
 * NULL with err when the loader refuses it. */
static tgi_config *load_cfg_err(const char *body, char *err, size_t errlen)
{
	char text[4096], p[256];
	snprintf(text, sizeof text, "workspace: %s\n%s", ws, body);
	write_file("toolgate.yaml", text);
	wpath(p, sizeof p, "toolgate.yaml");
	tgi_config *c = NULL;
	if (tgi_config_load(p, &c, err, errlen) < 0)
		return NULL;
	return c;
}

static tgi_config *load_cfg(const char *body)
{
	char err[1024];
	tgi_config *c = load_cfg_err(body, err, sizeof err);
	if (!c)
		fail_msg("config: %s", err);
	return c;
}

/* Open sinks from body; NULL and the sentence in err when refused (by the
 * loader or by the sinks). */
static tgi_sinks *sinks_try(const char *body, tgi_config **cfg, char *err, size_t errlen)
{
	tgi_sinks *s = NULL;
	err[0] = '\0';
	*cfg = load_cfg_err(body, err, errlen);
	if (!*cfg || tgi_sinks_open(*cfg, 0, &s, err, errlen) < 0)
		return NULL;
	return s;
}

static tgi_sinks *sinks_open_ok(const char *body, tgi_config **cfg)
{
	char err[1024];
	tgi_sinks *s = sinks_try(body, cfg, err, sizeof err);
	if (!s)
		fail_msg("sinks: %s", err);
	return s;
}

static void emit_n(tgi_sinks *s, int src, int i, size_t pad)
{
	char *fill = malloc(pad + 1);
	memset(fill, 'x', pad);
	fill[pad] = '\0';
	json_t *ev = json_pack("{s:s, s:i, s:i, s:s}", "type", "test.event", "src", src, "i", i,
	                       "pad", fill);
	tgi_sinks_emit(s, ev);
	json_decref(ev);
	free(fill);
}

/* ---- a line reader over a socket ---- */

typedef struct reader {
	int    fd;
	char   buf[1 << 16];
	size_t len;
	int    eof;
} reader;

static int sock_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	assert_true(strlen(path) < sizeof sa.sun_path);
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The next line (without '\n') into out, waiting up to ms: 1, 0 at EOF,
 * -1 on timeout. */
static int read_line(reader *r, char *out, size_t cap, int ms)
{
	double until = now_ms() + ms;
	for (;;) {
		char *nl = memchr(r->buf, '\n', r->len);
		if (nl) {
			size_t n = (size_t)(nl - r->buf);
			assert_true(n < cap);
			memcpy(out, r->buf, n);
			out[n] = '\0';
			memmove(r->buf, nl + 1, r->len - n - 1);
			r->len -= n + 1;
			return 1;
		}
		if (r->eof)
			return 0;
		int left = (int)(until - now_ms());
		if (left <= 0)
			return -1;
		struct pollfd p = {.fd = r->fd, .events = POLLIN};
		if (poll(&p, 1, left) <= 0)
			continue;
		assert_true(r->len < sizeof r->buf);
		ssize_t k = recv(r->fd, r->buf + r->len, sizeof r->buf - r->len, 0);
		if (k <= 0)
			r->eof = 1;
		else
			r->len += (size_t)k;
	}
}

/* Connect to the sinks' socket and wait until it is accepted: emit probes
 * until the reader sees one, then read past the probes. */
static void subscribe(tgi_sinks *s, const char *path, reader *r)
{
	memset(r, 0, sizeof *r);
	r->fd = sock_connect(path);
	assert_true(r->fd >= 0);
	char line[4096];
	for (int tries = 0; tries < 500; tries++) {
		json_t *probe = json_pack("{s:s}", "type", "probe");
		tgi_sinks_emit(s, probe);
		json_decref(probe);
		if (read_line(r, line, sizeof line, 10) == 1)
			break;
	}
	/* drain the probes that are still coming */
	while (read_line(r, line, sizeof line, 50) == 1)
		assert_non_null(strstr(line, "probe"));
}

/* ---- configuration ---- */

static void refused(const char *body, const char *want1, const char *want2)
{
	tgi_config *cfg;
	char err[1024];
	tgi_sinks *s = sinks_try(body, &cfg, err, sizeof err);
	if (s)
		fail_msg("accepted: %s", body);
	if (!strstr(err, want1) || (want2 && !strstr(err, want2)))
		fail_msg("for %s: expected \"%s\"%s%s in: %s", body, want1, want2 ? " and " : "",
		         want2 ? want2 : "", err);
	tgi_config_free(cfg);
}

static void test_config_refused(void **state)
{
	(void)state;
	/* file:line of the offending node */
	refused("events:\n  jsonl: e.jsonl\n  fsync: sometimes\n", "toolgate.yaml:4",
	        "events.fsync: expected always, never or a number of seconds");
	refused("events: yes\n", "toolgate.yaml:2", "events: expected a mapping");
	refused("events: {jsonl: e.jsonl, colour: red}\n", "unknown key \"colour\"", NULL);
	refused("events: {jsonl: e.jsonl, fsync: 0}\n", "events.fsync", "more than 0");
	refused("events: {jsonl: e.jsonl, fsync: -3}\n", "events.fsync", NULL);
	refused("events: {fsync: always}\n", "events.fsync", "set events.jsonl");
	refused("events: {queue: 65536}\n", "events.queue", "set events.socket");
	refused("events: {socket: s.sock, queue: 10}\n", "events.queue", "from 4096");
	refused("events: {socket: s.sock, queue: big}\n", "events.queue", "an integer from 4096");
	refused("events: {jsonl: \"\"}\n", "events.jsonl", "expected a file path");
	refused("events: {jsonl: [a]}\n", "events.jsonl", "expected a file path");
	refused("events: {jsonl: same, socket: same}\n", "events.socket", "same file");
	refused("events: {jsonl: no/such/dir/e.jsonl}\n", "events.jsonl", "cannot open");
	refused("events: {socket: no/such/dir/s.sock}\n", "events.socket", NULL);

	/* a symlink or a directory is never the JSONL file */
	char p[256], other[256];
	wpath(other, sizeof other, "elsewhere.jsonl");
	wpath(p, sizeof p, "link.jsonl");
	assert_int_equal(symlink(other, p), 0);
	refused("events: {jsonl: link.jsonl}\n", "symbolic link", NULL);
	assert_int_equal(access(other, F_OK), -1);   /* nothing made through the link */
	wpath(p, sizeof p, "adir");
	assert_int_equal(mkdir(p, 0700), 0);
	refused("events: {jsonl: adir}\n", "events.jsonl", NULL);

	/* no section, or an empty one: no sinks, no error */
	tgi_config *cfg = load_cfg("mode: default\n");
	tgi_sinks *s = (tgi_sinks *)1;
	char err[256];
	assert_int_equal(tgi_sinks_open(cfg, 0, &s, err, sizeof err), 0);
	assert_null(s);
	tgi_config_free(cfg);
	cfg = load_cfg("events: {}\n");
	assert_int_equal(tgi_sinks_open(cfg, 0, &s, err, sizeof err), 0);
	assert_null(s);
	tgi_config_free(cfg);
	tgi_sinks_close(NULL);
}

/* ---- JSONL ---- */

typedef struct emitter {
	tgi_sinks *s;
	int        src, n;
} emitter;

static void *emit_thread(void *arg)
{
	emitter *e = arg;
	for (int i = 0; i < e->n; i++)
		emit_n(e->s, e->src, i, (size_t)(i % 7) * 600);   /* some lines past PIPE_BUF */
	return NULL;
}

static void test_jsonl_shared(void **state)
{
	(void)state;
	tgi_config *c1, *c2;
	tgi_sinks *a = sinks_open_ok("events: {jsonl: .toolgate-events.jsonl, fsync: always}\n", &c1);
	tgi_sinks *b = sinks_open_ok("events: {jsonl: .toolgate-events.jsonl, fsync: 1}\n", &c2);
	char p[256];
	wpath(p, sizeof p, ".toolgate-events.jsonl");
	const tgi_strv *paths = tgi_sinks_paths(a);
	assert_int_equal(paths->n, 1);
	assert_string_equal(paths->v[0], p);

	enum { N = 600 };
	emitter ea = {a, 1, N}, eb = {b, 2, N};
	pthread_t ta, tb;
	assert_int_equal(pthread_create(&ta, NULL, emit_thread, &ea), 0);
	assert_int_equal(pthread_create(&tb, NULL, emit_thread, &eb), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	tgi_sinks_close(a);
	tgi_sinks_close(b);
	tgi_config_free(c1);
	tgi_config_free(c2);

	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	int next[3] = {0, 0, 0}, lines = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, f)) > 0) {
		assert_int_equal(line[n - 1], '\n');
		json_error_t je;
		json_t *ev = json_loads(line, 0, &je);
		if (!ev)
			fail_msg("line %d is not JSON (%s): %.80s", lines + 1, je.text, line);
		int src = (int)json_integer_value(json_object_get(ev, "src"));
		assert_true(src == 1 || src == 2);
		/* each source's lines whole and in its order */
		assert_int_equal(json_integer_value(json_object_get(ev, "i")), next[src]++);
		json_decref(ev);
		lines++;
	}
	free(line);
	fclose(f);
	assert_int_equal(lines, 2 * N);
	assert_int_equal(next[1], N);
	assert_int_equal(next[2], N);
}

/* ---- the socket ---- */

static void test_socket_every_event(void **state)
{
	(void)state;
	tgi_config *cfg;
	tgi_sinks *s = sinks_open_ok("events: {socket: ev.sock}\n", &cfg);
	char p[256];
	wpath(p, sizeof p, "ev.sock");
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);

	reader *r1 = malloc(sizeof *r1), *r2 = malloc(sizeof *r2);
	subscribe(s, p, r1);
	subscribe(s, p, r2);
	/* r1 got r2's probes too: drain them */
	char line[8192];
	while (read_line(r1, line, sizeof line, 50) == 1)
		assert_non_null(strstr(line, "probe"));

	enum { N = 3000 };
	for (int i = 0; i < N; i++)
		emit_n(s, 7, i, 40);
	reader *rs[2] = {r1, r2};
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < N; i++) {
			assert_int_equal(read_line(rs[k], line, sizeof line, 5000), 1);
			json_t *ev = json_loads(line, 0, NULL);
			assert_non_null(ev);
			assert_int_equal(json_integer_value(json_object_get(ev, "i")), i);
			json_decref(ev);
		}
	}
	/* what a subscriber sends is ignored; it stays subscribed */
	assert_int_equal(send(r1->fd, "hello\n", 6, 0), 6);
	emit_n(s, 7, N, 10);
	assert_int_equal(read_line(r1, line, sizeof line, 5000), 1);
	assert_non_null(strstr(line, "\"i\":3000"));

	/* at close: subscribers see EOF, the socket file is gone */
	tgi_sinks_close(s);
	tgi_config_free(cfg);
	while (read_line(r1, line, sizeof line, 5000) == 1)
		;
	assert_true(r1->eof);
	assert_int_equal(lstat(p, &st), -1);
	close(r1->fd);
	close(r2->fd);
	free(r1);
	free(r2);
}

static void test_stuck_subscriber(void **state)
{
	(void)state;
	tgi_config *cfg;
	tgi_sinks *s = sinks_open_ok("events: {socket: ev.sock, queue: 16384}\n", &cfg);
	char p[256], line[8192];
	wpath(p, sizeof p, "ev.sock");

	/* the stuck one connects first, so it is accepted when the reader is */
	int stuck = sock_connect(p);
	assert_true(stuck >= 0);
	reader *r = malloc(sizeof *r);
	subscribe(s, p, r);

	/* the reader keeps up (one line at a time) while the stuck one's socket
	 * buffer and then its queue fill */
	enum { N = 2000 };
	for (int i = 0; i < N; i++) {
		emit_n(s, 1, i, 1000);
		assert_int_equal(read_line(r, line, sizeof line, 5000), 1);
		json_t *ev = json_loads(line, 0, NULL);
		assert_non_null(ev);
		assert_int_equal(json_integer_value(json_object_get(ev, "i")), i);
		json_decref(ev);
	}

	/* now the stuck one reads: a prefix of the events, then the last line, then EOF */
	reader *sr = malloc(sizeof *sr);
	memset(sr, 0, sizeof *sr);
	sr->fd = stuck;
	int got = 0, dropped = 0, rc;
	while ((rc = read_line(sr, line, sizeof line, 6000)) == 1) {
		json_t *ev = json_loads(line, 0, NULL);
		if (!ev)
			fail_msg("not a JSON line: %.100s", line);
		const char *type = json_string_value(json_object_get(ev, "type"));
		if (!strcmp(type, "sink.dropped")) {
			assert_non_null(json_string_value(json_object_get(ev, "reason")));
			dropped++;
		} else {
			assert_int_equal(dropped, 0);   /* nothing after the last line */
			if (strcmp(type, "probe"))
				assert_int_equal(json_integer_value(json_object_get(ev, "i")), got++);
		}
		json_decref(ev);
	}
	assert_int_equal(rc, 0);             /* closed by the gate */
	assert_int_equal(dropped, 1);
	assert_true(got > 0 && got < N);     /* it fell behind somewhere in between */

	/* the reader is still subscribed */
	emit_n(s, 1, N, 10);
	assert_int_equal(read_line(r, line, sizeof line, 5000), 1);
	assert_non_null(strstr(line, "\"i\":2000"));

	tgi_sinks_close(s);
	tgi_config_free(cfg);
	close(stuck);
	close(r->fd);
	free(r);
	free(sr);
}

/* Emitting never waits for a subscriber that never reads, even one whose
 * queue is large enough that it stays subscribed all along: 100000 events
 * take about as long as with nobody subscribed (encoding the line is most
 * of it), and well under a second in an optimised build. */
static void test_emit_never_waits(void **state)
{
	(void)state;
	tgi_config *cfg;
	tgi_sinks *s = sinks_open_ok("events: {socket: ev.sock, queue: 67108864}\n", &cfg);
	char p[256];
	wpath(p, sizeof p, "ev.sock");
	json_t *ev = json_pack("{s:s, s:i, s:s}", "type", "test.event", "src", 2, "pad",
	                       "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	double t0 = now_ms();
	for (int i = 0; i < 100000; i++)
		tgi_sinks_emit(s, ev);
	double alone = now_ms() - t0;

	int stuck = sock_connect(p);
	assert_true(stuck >= 0);
	reader *r = malloc(sizeof *r);
	subscribe(s, p, r);   /* accepted (it connected first): both are subscribed */
	double worst = 0;
	t0 = now_ms();
	for (int i = 0; i < 100000; i++) {
		double t1 = now_ms();
		tgi_sinks_emit(s, ev);
		double d = now_ms() - t1;
		worst = d > worst ? d : worst;
	}
	double took = now_ms() - t0;
	json_decref(ev);
	print_message("100000 events: %.0f ms with nobody subscribed, %.0f ms with a subscriber "
	              "that never reads (the slowest one %.1f ms)\n", alone, took, worst);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	if (took > 4 * alone + 1000)   /* instrumented: only against itself */
		fail_msg("a stuck subscriber slowed emitting down: %.0f ms against %.0f ms", took, alone);
#else
	if (took > 1000)
		fail_msg("100000 events with a stuck subscriber took %.0f ms", took);
#endif

	/* the stuck one was kept (its queue holds it all); the reader too */
	char line[4096];
	int n = 0;
	while (n < 100000 && read_line(r, line, sizeof line, 5000) == 1)
		n++;
	assert_int_equal(n, 100000);
	tgi_sinks_close(s);
	tgi_config_free(cfg);
	close(stuck);
	close(r->fd);
	free(r);
}

/* A socket file nobody listens on: what a crashed gate leaves. */
static void make_stale(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	close(fd);
}

static void test_stale_and_foreign_files(void **state)
{
	(void)state;
	char p[256], line[4096];
	struct stat st;
	wpath(p, sizeof p, "ev.sock");

	/* stale: replaced, and served */
	make_stale(p);
	assert_int_equal(sock_connect(p), -1);
	tgi_config *cfg;
	tgi_sinks *s = sinks_open_ok("events: {socket: ev.sock}\n", &cfg);
	reader *r = malloc(sizeof *r);
	subscribe(s, p, r);
	emit_n(s, 1, 42, 0);
	assert_int_equal(read_line(r, line, sizeof line, 5000), 1);
	assert_non_null(strstr(line, "\"i\":42"));
	close(r->fd);
	tgi_sinks_close(s);
	tgi_config_free(cfg);

	/* a regular file there is refused and left as it was */
	write_file("ev.sock", "not a socket\n");
	refused("events: {socket: ev.sock}\n", "exists and is not a socket", "toolgate.yaml:2");
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, 13);
	unlink(p);

	/* so is a symlink, even to a socket */
	char target[256];
	wpath(target, sizeof target, "real.sock");
	make_stale(target);
	assert_int_equal(symlink(target, p), 0);
	refused("events: {socket: ev.sock}\n", "not a socket", NULL);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	unlink(p);
	free(r);
}

static void test_live_socket_left_alone(void **state)
{
	(void)state;
	char p[256], line[4096];
	struct stat st;
	wpath(p, sizeof p, "ev.sock");
	tgi_config *c1, *c2;
	tgi_sinks *first = sinks_open_ok("events: {socket: ev.sock}\n", &c1);
	reader *r = malloc(sizeof *r);
	subscribe(first, p, r);

	/* a second gate finds it live: it does not take it */
	tgi_sinks *second = sinks_open_ok("events: {socket: ev.sock}\n", &c2);
	emit_n(first, 1, 1, 0);
	assert_int_equal(read_line(r, line, sizeof line, 5000), 1);
	assert_non_null(strstr(line, "\"i\":1"));
	emit_n(second, 2, 2, 0);   /* not served by second: nothing arrives */
	assert_int_equal(read_line(r, line, sizeof line, 300), -1);

	/* the first goes: its file goes with it, and the second takes over */
	tgi_sinks_close(first);
	tgi_config_free(c1);
	assert_int_equal(read_line(r, line, sizeof line, 5000), 0);
	close(r->fd);
	int fd = -1;
	for (int i = 0; i < 100 && fd < 0; i++) {
		usleep(50 * 1000);
		fd = sock_connect(p);
	}
	assert_true(fd >= 0);
	close(fd);
	subscribe(second, p, r);
	emit_n(second, 2, 3, 0);
	assert_int_equal(read_line(r, line, sizeof line, 5000), 1);
	assert_non_null(strstr(line, "\"i\":3"));
	close(r->fd);

	/* a gate that yields the socket removes it */
	tgi_sinks_yield_socket(second);
	for (int i = 0; i < 100 && lstat(p, &st) == 0; i++)
		usleep(20 * 1000);
	assert_int_equal(lstat(p, &st), -1);
	tgi_sinks_close(second);
	tgi_config_free(c2);
	free(r);
}

/* A socket path longer than sun_path still works (through the directory). */
static void test_long_socket_path(void **state)
{
	(void)state;
	char deep[512], body[1024], via[128];
	snprintf(deep, sizeof deep, "%s", ws);
	const char *part = "/a-rather-long-directory-name-to-pass-the-limit";
	for (int i = 0; i < 3; i++) {
		strcat(deep, part);
		assert_int_equal(mkdir(deep, 0700), 0);
	}
	snprintf(body, sizeof body, "events: {socket: %s/ev.sock}\n", deep);
	tgi_config *cfg;
	tgi_sinks *s = sinks_open_ok(body, &cfg);
	assert_true(strlen(deep) + 8 > sizeof(((struct sockaddr_un *)0)->sun_path));
	char p[600];
	snprintf(p, sizeof p, "%s/ev.sock", deep);
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	int dfd = open(deep, O_PATH | O_DIRECTORY);
	assert_true(dfd >= 0);
	snprintf(via, sizeof via, "/proc/self/fd/%d/ev.sock", dfd);
	reader *r = malloc(sizeof *r);
	subscribe(s, via, r);
	char line[4096];
	emit_n(s, 1, 5, 0);
	assert_int_equal(read_line(r, line, sizeof line, 5000), 1);
	assert_non_null(strstr(line, "\"i\":5"));
	tgi_sinks_close(s);
	tgi_config_free(cfg);
	assert_int_equal(lstat(p, &st), -1);   /* removed at close */
	close(r->fd);
	close(dfd);
	free(r);
}

/* ---- the summary ---- */

static void test_summary(void **state)
{
	(void)state;
	char *s = tgi_event_summary("read_file", "{\"path\":\"a.txt\"}", "persisted", NULL, NULL);
	assert_string_equal(s, "read_file {\"path\":\"a.txt\"}");
	free(s);
	s = tgi_event_summary("deploy", "{\"env\":\"prod\"}", "denied", "not_permitted",
	                      "deploy to prod is not allowed");
	assert_string_equal(s, "deploy {\"env\":\"prod\"} → denied not_permitted: deploy to prod "
	                       "is not allowed");
	free(s);

	/* long args are cut near 160 characters, on a character boundary */
	char args[2000] = "{\"q\":\"";
	for (int i = 0; i < 600; i++)
		strcat(args, "é");
	strcat(args, "\"}");
	s = tgi_event_summary("search_files", args, "persisted", NULL, NULL);
	assert_true(tgi_utf8_len(s, strlen(s)) <= 161);
	assert_non_null(strstr(s, "…"));
	json_t *j = tgi_json_text(s, strlen(s));   /* valid UTF-8 */
	assert_string_equal(json_string_value(j), s);
	json_decref(j);
	free(s);

	/* control characters never reach a line */
	s = tgi_event_summary("t\x1b[31m", "{}", "failed", "tool_error", "line1\nline2\r\x07");
	for (const char *c = s; *c; c++)
		assert_true((unsigned char)*c >= 0x20 && *c != 0x7f);
	free(s);

	s = tgi_event_summary(NULL, NULL, NULL, NULL, NULL);
	assert_string_equal(s, "");
	free(s);
	s = tgi_event_summary("x", "null", "invalid", "unknown_tool", NULL);
	assert_string_equal(s, "x → invalid unknown_tool");
	free(s);
}

/* ---- a gate's calls: the lines, their seq, redaction ---- */

static const char gate_cfg[] =
	"mode: bypassPermissions\n"
	"events: {jsonl: .toolgate/events.jsonl}\n"
	"tools:\n"
	"  login:\n"
	"    description: Log in.\n"
	"    input_schema: {type: object, properties: {user: {type: string}, password: {type: "
	"string}, token: {type: string}}}\n"
	"    command: [/bin/sh, -c, \"cat > /dev/null; echo ok\"]\n"
	"    read_only: true\n";

static tg_gate *open_gate(void)
{
	char p[256];
	wpath(p, sizeof p, "toolgate.yaml");
	tg_options o = {.config_path = p, .workspace = ws, .sync_full = 0};
	tg_gate *g = NULL;
	char *err = NULL;
	if (tg_gate_open(&o, &g, &err) < 0)
		fail_msg("open: %s", err);
	return g;
}

static tg_status call(tg_gate *g, const char *tool, const char *args, const char *session)
{
	tg_request req = {.tool = tool, .args = args, .session = session};
	tg_result *res = NULL;
	tg_status st = tg_call(g, &req, &res);
	tg_result_free(res);
	return st;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = calloc(1, 1 << 20);
	size_t n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void test_call_lines(void **state)
{
	(void)state;
	write_file("toolgate.yaml", gate_cfg);
	write_file("a.txt", "one\n");
	tg_gate *g = open_gate();
	assert_int_equal(call(g, "read_file", "{\"path\":\"a.txt\"}", "s1"), TG_PERSISTED);
	assert_int_equal(call(g, "no_such_tool", "{}", NULL), TG_INVALID);
	assert_int_equal(call(g, "login", "{\"user\":\"ann\",\"password\":\"hunter2-planted\","
	                                  "\"token\":\"sk-proj-PLANTEDabcdefghijklmnopqrstuv\"}",
	                      "s1"), TG_PERSISTED);
	tg_gate_close(g);

	char p[256];
	wpath(p, sizeof p, ".toolgate/events.jsonl");
	char *text = slurp(p);
	assert_non_null(text);
	static const char *const keys[] = {"seq", "ts", "type", "stage", "op_id", "session",
	                                   "principal", "tool", "status", "summary", "data"};
	int64_t last = 0;
	int lines = 0, persisted = 0, invalid = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		json_t *ev = json_loads(line, 0, NULL);
		assert_non_null(ev);
		for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
			if (!json_object_get(ev, keys[k]))
				fail_msg("no \"%s\" in %s", keys[k], line);
		int64_t seq = json_integer_value(json_object_get(ev, "seq"));
		assert_true(seq > last);   /* the ledger's seq, in order */
		last = seq;
		const char *type = json_string_value(json_object_get(ev, "type"));
		const char *tool = json_string_value(json_object_get(ev, "tool"));
		const char *status = json_string_value(json_object_get(ev, "status"));
		const char *ts = json_string_value(json_object_get(ev, "ts"));
		assert_int_equal(strlen(ts), 24);
		assert_int_equal(ts[23], 'Z');
		if (!strcmp(type, "tool.call.persisted")) {
			persisted++;
			assert_string_equal(status, "persisted");
		}
		if (!strcmp(type, "tool.call.invalid")) {
			invalid++;
			assert_string_equal(status, "invalid");
			assert_non_null(strstr(json_string_value(json_object_get(ev, "summary")),
			                       "→ invalid unknown_tool"));
		}
		if (tool && !strcmp(tool, "read_file")) {
			assert_string_equal(json_string_value(json_object_get(ev, "session")), "s1");
			assert_non_null(strstr(json_string_value(json_object_get(ev, "summary")), "a.txt"));
		}
		json_decref(ev);
		lines++;
	}
	free(text);
	assert_true(lines >= 5);
	assert_int_equal(persisted, 2);
	assert_int_equal(invalid, 1);

	/* the same seqs as the ledger's */
	char db[256];
	wpath(db, sizeof db, ".toolgate/ledger.db");
	g = open_gate();
	tg_log_query q = {0};
	char *err = NULL, *log = tg_log(g, &q, &err);
	assert_non_null(log);
	json_t *ops = json_loads(log, 0, NULL);
	free(log);
	json_t *evs = json_object_get(json_array_get(ops, json_array_size(ops) - 1), "events");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(evs, json_array_size(evs) - 1),
	                                                    "seq")),
	                 last);
	json_decref(ops);
	tg_gate_close(g);

	/* no planted secret in the sink */
	text = slurp(p);
	assert_null(strstr(text, "hunter2-planted"));
	assert_null(strstr(text, "PLANTED"));
	free(text);
}

/* ---- following the ledger ---- */

typedef struct follower {
	tg_gate        *g;
	tg_log_query    q;
	long long       after;
	volatile int    stop;
	pthread_mutex_t mu;
	json_t         *lines;   /* under mu */
	int             rc;
	double          returned_at;
	pthread_t       thread;
} follower;

static int on_line(void *arg, const char *line)
{
	follower *f = arg;
	json_t *ev = json_loads(line, 0, NULL);
	assert_non_null(ev);
	pthread_mutex_lock(&f->mu);
	json_array_append_new(f->lines, ev);
	pthread_mutex_unlock(&f->mu);
	return 0;
}

static void *follow_thread(void *arg)
{
	follower *f = arg;
	char *err = NULL;
	f->rc = tg_log_follow(f->g, &f->q, f->after, on_line, f, &f->stop, &err);
	if (f->rc < 0)
		fprintf(stderr, "follow: %s\n", err);
	free(err);
	f->returned_at = now_ms();
	return NULL;
}

/* A follower on a gate of its own, from after (-1: now).  On the heap: a
 * failed assertion leaves it running, and it must not write into a stack
 * frame that is gone. */
static follower *follower_start(long long after, const char *tool, const char *status,
                                const char *session)
{
	follower *f = calloc(1, sizeof *f);
	f->g = open_gate();
	f->after = after;
	f->q.tool = tool;
	f->q.status = status;
	f->q.session = session;
	f->lines = json_array();
	pthread_mutex_init(&f->mu, NULL);
	assert_int_equal(pthread_create(&f->thread, NULL, follow_thread, f), 0);
	return f;
}

/* Wait until f has a line of type for tool: the ms it took, or -1. */
static double wait_for(follower *f, const char *type, const char *tool, double ms)
{
	double t0 = now_ms();
	while (now_ms() - t0 < ms) {
		pthread_mutex_lock(&f->mu);
		size_t i;
		json_t *ev;
		int found = 0;
		json_array_foreach(f->lines, i, ev) {
			const char *t = json_string_value(json_object_get(ev, "type"));
			const char *tl = json_string_value(json_object_get(ev, "tool"));
			if (t && tl && !strcmp(t, type) && (!tool || !strcmp(tl, tool)))
				found = 1;
		}
		pthread_mutex_unlock(&f->mu);
		if (found)
			return now_ms() - t0;
		usleep(10 * 1000);
	}
	return -1;
}

/* How many lines have key == value (value NULL: key null or absent). */
static size_t count_lines(follower *f, const char *key, const char *value)
{
	size_t n = 0, i;
	json_t *ev;
	pthread_mutex_lock(&f->mu);
	json_array_foreach(f->lines, i, ev) {
		const char *v = json_string_value(json_object_get(ev, key));
		n += value ? v && !strcmp(v, value) : !v;
	}
	pthread_mutex_unlock(&f->mu);
	return n;
}

static void follower_stop(follower *f)
{
	double t0 = now_ms();
	tgi_flag_set(&f->stop);
	pthread_join(f->thread, NULL);
	assert_int_equal(f->rc, 0);
	assert_true(f->returned_at - t0 < 1000);   /* *stop is looked at every 250 ms */
	tg_gate_close(f->g);
	json_decref(f->lines);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

static long long last_seq(tg_gate *g)
{
	int64_t seq = -1;
	char err[256];
	int rc = tgi_store_last_seq(g->store, &seq, err, sizeof err);
	assert_int_equal(rc, 0);
	return seq;
}

static void test_follow(void **state)
{
	(void)state;
	write_file("toolgate.yaml", gate_cfg);
	write_file("a.txt", "one\n");
	tg_gate *writer = open_gate();   /* another gate: as another process would */
	assert_int_equal(call(writer, "read_file", "{\"path\":\"a.txt\"}", "old"), TG_PERSISTED);
	long long from = last_seq(writer);
	assert_true(from > 0);

	follower *all = follower_start(from, NULL, NULL, NULL);
	follower *reads = follower_start(from, "read_file", NULL, NULL);
	follower *failed = follower_start(from, NULL, "failed", NULL);
	follower *sess = follower_start(from, NULL, NULL, "s2");
	usleep(100 * 1000);

	assert_int_equal(call(writer, "list_dir", "{}", "s2"), TG_PERSISTED);
	double took = wait_for(all, "tool.call.persisted", "list_dir", 5000);
	assert_true(took >= 0);
	if (took > 1000)
		fail_msg("the follower saw a call %.0f ms after it was written", took);
	assert_int_equal(call(writer, "read_file", "{\"path\":\"a.txt\"}", "s3"), TG_PERSISTED);
	assert_int_equal(call(writer, "read_file", "{\"path\":\"missing.txt\"}", "s3"), TG_FAILED);
	assert_true(wait_for(all, "tool.call.failed", "read_file", 5000) >= 0);
	assert_true(wait_for(reads, "tool.call.failed", "read_file", 5000) >= 0);
	assert_true(wait_for(sess, "tool.call.persisted", "list_dir", 5000) >= 0);
	usleep(300 * 1000);

	/* after `from` only; the filters hold */
	assert_int_equal(count_lines(all, "session", "old"), 0);
	assert_true(count_lines(all, "session", "s2") >= 3);
	assert_true(count_lines(all, "session", "s3") >= 6);
	assert_int_equal(count_lines(reads, "tool", "list_dir"), 0);
	assert_true(count_lines(reads, "tool", "read_file") >= 6);
	assert_int_equal(count_lines(sess, "session", "s3"), 0);
	assert_true(count_lines(sess, "session", "s2") >= 3);
	assert_true(wait_for(failed, "tool.call.failed", "read_file", 5000) >= 0);
	assert_int_equal(count_lines(failed, "status", "persisted"), 0);

	/* the shape the sinks write, seqs ascending */
	pthread_mutex_lock(&all->mu);
	static const char *const keys[] = {"seq", "ts", "type", "stage", "op_id", "session",
	                                   "principal", "tool", "status", "summary", "data"};
	size_t i;
	json_t *ev;
	long long prev = from;
	json_array_foreach(all->lines, i, ev) {
		for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
			if (!json_object_get(ev, keys[k]))
				fail_msg("no \"%s\" in a followed event", keys[k]);
		long long seq = json_integer_value(json_object_get(ev, "seq"));
		assert_true(seq > prev);
		prev = seq;
	}
	pthread_mutex_unlock(&all->mu);

	follower_stop(all);
	follower_stop(reads);
	follower_stop(failed);
	follower_stop(sess);
	tg_gate_close(writer);
}

/* -1: only what is written after the follow began. */
static void test_follow_from_now(void **state)
{
	(void)state;
	write_file("toolgate.yaml", gate_cfg);
	write_file("a.txt", "one\n");
	tg_gate *writer = open_gate();
	assert_int_equal(call(writer, "read_file", "{\"path\":\"a.txt\"}", "old"), TG_PERSISTED);
	follower *f = follower_start(-1, NULL, NULL, NULL);
	/* it prints nothing until it has found where the ledger ends: call until it does */
	double seen = -1;
	for (int i = 0; i < 50 && seen < 0; i++) {
		assert_int_equal(call(writer, "list_dir", "{}", "new"), TG_PERSISTED);
		seen = wait_for(f, "tool.call.persisted", "list_dir", 100);
	}
	assert_true(seen >= 0);
	assert_int_equal(count_lines(f, "session", "old"), 0);
	follower_stop(f);
	tg_gate_close(writer);
}

/* fn returning nonzero ends the follow; from 0, everything in the ledger. */
static int stop_at_first(void *arg, const char *line)
{
	json_t *ev = json_loads(line, 0, NULL);
	assert_non_null(ev);
	*(long long *)arg = json_integer_value(json_object_get(ev, "seq"));
	json_decref(ev);
	return 1;
}

static void test_follow_from_seq(void **state)
{
	(void)state;
	write_file("toolgate.yaml", gate_cfg);
	write_file("a.txt", "one\n");
	tg_gate *g = open_gate();
	assert_int_equal(call(g, "read_file", "{\"path\":\"a.txt\"}", NULL), TG_PERSISTED);
	assert_int_equal(call(g, "read_file", "{\"path\":\"a.txt\"}", NULL), TG_PERSISTED);
	long long seq = 0, last = last_seq(g);
	char *err = NULL;
	volatile int stop = 0;
	assert_int_equal(tg_log_follow(g, NULL, 0, stop_at_first, &seq, &stop, &err), 0);
	assert_int_equal(seq, 1);
	assert_int_equal(tg_log_follow(g, NULL, last - 1, stop_at_first, &seq, &stop, &err), 0);
	assert_int_equal(seq, last);
	/* *stop already set: returns at once, fn never called */
	stop = 1;
	seq = -5;
	assert_int_equal(tg_log_follow(g, NULL, 0, stop_at_first, &seq, &stop, &err), 0);
	assert_int_equal(seq, -5);
	tg_gate_close(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_config_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jsonl_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_socket_every_event, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stuck_subscriber, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emit_never_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_and_foreign_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live_socket_left_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_socket_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_summary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_follow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_follow_from_now, setup, teardown),
		cmocka_unit_test_setup_teardown(test_follow_from_seq, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
