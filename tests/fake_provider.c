/*
 * fake_provider.c — a model API on 127.0.0.1 for the tests of the HTTP
 * providers (src/agent/http.c): it replays recorded answers, so no test
 * needs the network or a key.
 *
 *   fake_provider PORTFILE SCRIPTDIR [LOGFILE]
 *
 * It listens on an ephemeral port of 127.0.0.1, writes the port number to
 * PORTFILE (whole, through a rename) and answers requests one connection
 * at a time, each connection closed after its answer.
 *
 * A request's path names its scenario: /s/<scenario>/anything.  The n-th
 * request of a scenario gets SCRIPTDIR/<scenario>/<n>.resp; past the last
 * step, a 404 with a JSON error, unless the scenario holds a file named
 * `repeat`: then it starts again at step 1.  A step is a few lines:
 *
 *   status 429                          (default 200)
 *   header retry-after: 1               (any number; default content-type
 *                                        application/json)
 *   sleep-ms 3000                       before answering
 *   chunk 64                            send the body in chunks of this many
 *                                       bytes (chunked encoding) ...
 *   delay-ms 5                          ... this far apart
 *   drop-after 300                      close the connection after this many
 *                                       bytes of body (no end of body)
 *   body ../protocols/openai-chat/text.sse   the body, from SCRIPTDIR
 *   ---                                 or: the rest of the file is the body
 *
 * Every request is appended to LOGFILE (default PORTFILE.log) before it is
 * answered, as one JSON line: {"n", "method", "path", "headers":
 * [[name, value]...] (all of them, as sent), "body"}.
 *
 * Owns: its socket and log.  Must not: be used outside tests (it trusts
 * SCRIPTDIR and serves one client at a time).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX   (64u << 10)
#define BODY_MAX   (16u << 20)
#define FILE_MAX   (64u << 20)
#define SCENARIOS  64
#define NAME_MAX_  64

typedef struct step {
	int    status;
	char   headers[4096];  /* "Name: value\r\n" lines */
	int    has_ctype;
	long   sleep_ms, chunk, delay_ms, drop_after;
	char  *body;
	size_t body_len;
} step;

static struct { char name[NAME_MAX_]; int count; } scenarios[SCENARIOS];
static const char *script_dir, *log_path;
static int requests;

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int send_all(int fd, const void *p, size_t n)
{
	const char *s = p;
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = malloc(FILE_MAX + 1);
	if (!buf) {
		fclose(f);
		return NULL;
	}
	n = fread(buf, 1, FILE_MAX, f);
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* ---- the request ---------------------------------------------------------- */

typedef struct request {
	char   head[HEAD_MAX + 1];
	size_t head_len;   /* up to and with the blank line */
	char  *body;
	size_t body_len;
	char   method[16], path[2048];
} request;

/* Read one request; 0, or -1 when the client went away or sent nonsense. */
static int read_request(int fd, request *rq)
{
	size_t have = 0, want;
	char *end = NULL, *cl;
	long content_length = 0;

	while (!end) {
		if (have == HEAD_MAX)
			return -1;
		ssize_t r = recv(fd, rq->head + have, HEAD_MAX - have, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		have += (size_t)r;
		rq->head[have] = '\0';
		end = strstr(rq->head, "\r\n\r\n");
	}
	rq->head_len = (size_t)(end - rq->head) + 4;
	if (sscanf(rq->head, "%15s %2047s", rq->method, rq->path) != 2)
		return -1;
	for (cl = rq->head; (cl = strcasestr(cl, "\r\ncontent-length:")); cl++)
		content_length = strtol(cl + 17, NULL, 10);
	if (content_length < 0 || content_length > (long)BODY_MAX)
		return -1;
	want = (size_t)content_length;
	rq->body = malloc(want + 1);
	if (!rq->body)
		return -1;
	rq->body_len = have - rq->head_len < want ? have - rq->head_len : want;
	memcpy(rq->body, rq->head + rq->head_len, rq->body_len);
	while (rq->body_len < want) {
		ssize_t r = recv(fd, rq->body + rq->body_len, want - rq->body_len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		rq->body_len += (size_t)r;
	}
	rq->body[rq->body_len] = '\0';
	return 0;
}

static void log_request(const request *rq)
{
	json_t *headers = json_array(), *body, *line;
	const char *p = strstr(rq->head, "\r\n");
	char *text;
	FILE *f;

	while (p && p + 2 < rq->head + rq->head_len - 2) {
		const char *s = p + 2, *e = strstr(s, "\r\n"), *colon;
		if (!e || e == s)
			break;
		colon = memchr(s, ':', (size_t)(e - s));
		if (colon) {
			const char *v = colon + 1;
			while (v < e && *v == ' ')
				v++;
			json_array_append_new(headers, json_pack("[s#s#]", s, (int)(colon - s), v,
			                                         (int)(e - v)));
		}
		p = e;
	}
	body = json_stringn(rq->body, rq->body_len);
	line = json_pack("{s:i, s:s, s:s, s:o, s:o}", "n", requests, "method", rq->method, "path",
	                 rq->path, "headers", headers, "body",
	                 body ? body : json_string("(not UTF-8)"));
	text = json_dumps(line, JSON_COMPACT);
	f = fopen(log_path, "a");
	if (f && text) {
		fprintf(f, "%s\n", text);
		fclose(f);
	} else if (f) {
		fclose(f);
	}
	free(text);
	json_decref(line);
}

/* ---- the answer ------------------------------------------------------------- */

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 529: return "Overloaded";
	default:  return "Whatever";
	}
}

/* Read SCRIPTDIR/<scenario>/<n>.resp into st; -1 when there is none. */
static int load_step(const char *scenario, int n, step *st)
{
	char path[4096];
	size_t len;
	char *text, *line, *next;

	memset(st, 0, sizeof *st);
	st->status = 200;
	snprintf(path, sizeof path, "%s/%s/%d.resp", script_dir, scenario, n);
	text = read_file(path, &len);
	if (!text)
		return -1;
	for (line = text; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strcmp(line, "---") == 0) {
			size_t off = next ? (size_t)(next - text) : len;
			st->body_len = len - off;
			st->body = malloc(st->body_len + 1);
			memcpy(st->body, text + off, st->body_len);
			st->body[st->body_len] = '\0';
			break;
		}
		if (!*line || *line == '#')
			continue;
		if (strncmp(line, "status ", 7) == 0) {
			st->status = atoi(line + 7);
		} else if (strncmp(line, "header ", 7) == 0) {
			size_t used = strlen(st->headers);
			snprintf(st->headers + used, sizeof st->headers - used, "%s\r\n", line + 7);
			if (strncasecmp(line + 7, "content-type:", 13) == 0)
				st->has_ctype = 1;
		} else if (strncmp(line, "sleep-ms ", 9) == 0) {
			st->sleep_ms = atol(line + 9);
		} else if (strncmp(line, "chunk ", 6) == 0) {
			st->chunk = atol(line + 6);
		} else if (strncmp(line, "delay-ms ", 9) == 0) {
			st->delay_ms = atol(line + 9);
		} else if (strncmp(line, "drop-after ", 11) == 0) {
			st->drop_after = atol(line + 11);
		} else if (strncmp(line, "body ", 5) == 0) {
			char file[4096];
			snprintf(file, sizeof file, "%s/%s", script_dir, line + 5);
			free(st->body);
			st->body = read_file(file, &st->body_len);
			if (!st->body) {
				fprintf(stderr, "fake_provider: cannot read %s\n", file);
				free(text);
				return -1;
			}
		} else {
			fprintf(stderr, "fake_provider: %s: what is \"%s\"?\n", path, line);
		}
	}
	free(text);
	if (!st->body)
		st->body = calloc(1, 1);
	return 0;
}

static void answer(int fd, const step *st)
{
	char head[8192];
	size_t len = st->body_len, sent = 0;
	int chunked = st->chunk > 0;

	if (st->drop_after > 0 && (size_t)st->drop_after < len)
		len = (size_t)st->drop_after;
	sleep_ms(st->sleep_ms);
	if (chunked)
		snprintf(head, sizeof head,
		         "HTTP/1.1 %d %s\r\n%s%sTransfer-Encoding: chunked\r\n"
		         "Connection: close\r\n\r\n",
		         st->status, reason(st->status), st->headers,
		         st->has_ctype ? "" : "Content-Type: application/json\r\n");
	else
		snprintf(head, sizeof head,
		         "HTTP/1.1 %d %s\r\n%s%sContent-Length: %zu\r\nConnection: close\r\n\r\n",
		         st->status, reason(st->status), st->headers,
		         st->has_ctype ? "" : "Content-Type: application/json\r\n", st->body_len);
	if (send_all(fd, head, strlen(head)) < 0)
		return;
	while (sent < len) {
		size_t n = chunked ? (size_t)st->chunk : len - sent;
		char size[32];
		if (n > len - sent)
			n = len - sent;
		if (chunked) {
			snprintf(size, sizeof size, "%zx\r\n", n);
			if (send_all(fd, size, strlen(size)) < 0)
				return;
		}
		if (send_all(fd, st->body + sent, n) < 0)
			return;
		if (chunked && send_all(fd, "\r\n", 2) < 0)
			return;
		sent += n;
		if (chunked && sent < len)
			sleep_ms(st->delay_ms);
	}
	if (chunked && len == st->body_len)
		send_all(fd, "0\r\n\r\n", 5);
}

/* The scenario of a path /s/<name>/...; "" when it names none. */
static void scenario_of(const char *path, char *out, size_t cap)
{
	size_t n = 0;

	out[0] = '\0';
	if (strncmp(path, "/s/", 3) != 0)
		return;
	for (path += 3; *path && *path != '/' && *path != '?' && n + 1 < cap; path++, n++) {
		char c = *path;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-')) {
			n = 0;
			break;
		}
		out[n] = c;
	}
	out[n] = '\0';
}

static int next_step(const char *name)
{
	for (int i = 0; i < SCENARIOS; i++) {
		if (strcmp(scenarios[i].name, name) == 0)
			return ++scenarios[i].count;
		if (!scenarios[i].name[0]) {
			snprintf(scenarios[i].name, sizeof scenarios[i].name, "%s", name);
			return scenarios[i].count = 1;
		}
	}
	return 1000000;
}

/* Does the scenario start again after its last step (a file named "repeat")? */
static int repeats(const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s/repeat", script_dir, name);
	return access(path, F_OK) == 0;
}

static void restart(const char *name)
{
	for (int i = 0; i < SCENARIOS; i++)
		if (strcmp(scenarios[i].name, name) == 0)
			scenarios[i].count = 1;
}

static void serve(int fd)
{
	request *rq = calloc(1, sizeof *rq);
	char name[NAME_MAX_];
	step st;

	if (!rq || read_request(fd, rq) < 0)
		goto done;
	requests++;
	log_request(rq);
	scenario_of(rq->path, name, sizeof name);
	int n = name[0] ? next_step(name) : 0;
	int found = name[0] && load_step(name, n, &st) == 0;
	if (!found && n > 1 && repeats(name)) {
		restart(name);
		n = 1;
		found = load_step(name, n, &st) == 0;
	}
	if (!found) {
		memset(&st, 0, sizeof st);
		st.status = 404;
		st.body = malloc(256);
		snprintf(st.body, 256,
		         "{\"error\":{\"message\":"
		         "\"fake_provider: scenario \\\"%s\\\" has no step %d\"}}",
		         name, n);
		st.body_len = strlen(st.body);
	}
	answer(fd, &st);
	free(st.body);
done:
	if (rq)
		free(rq->body);
	free(rq);
	shutdown(fd, SHUT_WR);
	close(fd);
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = {.sin_family = AF_INET};
	socklen_t alen = sizeof addr;
	char tmp[4096], logbuf[4096];
	int lfd, one = 1;
	FILE *f;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: fake_provider PORTFILE SCRIPTDIR [LOGFILE]\n");
		return 2;
	}
	script_dir = argv[2];
	snprintf(logbuf, sizeof logbuf, "%s.log", argv[1]);
	log_path = argc == 4 ? argv[3] : logbuf;
	signal(SIGPIPE, SIG_IGN);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 16) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&addr, &alen) < 0) {
		perror("fake_provider: listen");
		return 1;
	}
	snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", ntohs(addr.sin_port)) < 0 || fclose(f) != 0 ||
	    rename(tmp, argv[1]) < 0) {
		perror("fake_provider: port file");
		return 1;
	}
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			perror("fake_provider: accept");
			return 1;
		}
		serve(fd);
	}
}
