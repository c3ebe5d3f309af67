/*
 * common.c — what the two ledger implementations (sqlite.c, postgres.c)
 * share: the checks both make on their arguments, with their sentences;
 * who this process is as a claim's owner (hostname, boot id, pid
 * namespace, start time), and whether an owner on this host still runs
 * (/proc); the time inside a UUIDv7; and the values both
 * build alike (an applied op's envelope, an approval's answer, a
 * decision's reason as it is kept, the stats' tools order, a text column
 * as JSON, a kept eval run as JSON).
 *
 * One copy of each, so that the two stores cannot drift apart in what
 * they refuse, what they say, or how they read a claim's owner.
 *
 * Owns: the functions declared under "shared by the implementations" in
 * impl.h.  Must not: know either database (no SQL, no connection, no
 * transaction), or decide anything store.h leaves to an implementation.
 */
#include "store/impl.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TGI_RETRY_MIN_S  1.0
#define TGI_RETRY_MAX_S  30.0
#define TGI_PIN_NAME_MAX 256 /* bytes of a pinned tool name */

const char *tgi_quoted(char *buf, size_t cap, const char *s)
{
	tgi_sanitize(buf, cap, s ? s : "");
	return buf;
}

/* ---- checks on arguments ---- */

int tgi_check_op_id(const char *op_id, char *err, size_t errlen)
{
	char q[64];
	if (tgi_uuid_ok(op_id))
		return 0;
	tgi_snprintf(err, errlen, "op id '%s' is not a UUID", tgi_quoted(q, sizeof q, op_id));
	return -1;
}

int tgi_check_scope(const char *scope, char *err, size_t errlen)
{
	if (!scope || !*scope) {
		tgi_snprintf(err, errlen, "the idempotency scope is empty");
		return -1;
	}
	size_t n = strlen(scope);
	if (n > TGI_SCOPE_MAX) {
		tgi_snprintf(err, errlen, "the idempotency scope is too long (%zu bytes; at most %d)", n,
		             TGI_SCOPE_MAX);
		return -1;
	}
	return 0;
}

int tgi_check_record(const tgi_op_record *op, const tgi_event *ev, size_t nev,
                     const char *idem_scope, tgi_idem_settle how, char *err, size_t errlen)
{
	if (!op) {
		tgi_snprintf(err, errlen, "no op to record");
		return -1;
	}
	if (tgi_check_op_id(op->op_id, err, errlen) < 0)
		return -1;
	if (!op->status || !op->envelope) {
		tgi_snprintf(err, errlen, "op '%s' has no %s to record", op->op_id,
		             op->status ? "envelope" : "status");
		return -1;
	}
	if (nev && !ev) {
		tgi_snprintf(err, errlen, "the events of op '%s' are missing", op->op_id);
		return -1;
	}
	for (size_t i = 0; i < nev; i++) {
		if (!ev[i].type) {
			tgi_snprintf(err, errlen, "event %zu of op '%s' has no type", i, op->op_id);
			return -1;
		}
	}
	if (idem_scope && how != TGI_SETTLE_NONE && tgi_check_scope(idem_scope, err, errlen) < 0)
		return -1;
	return 0;
}

int tgi_check_loop_window(const char *session, char *err, size_t errlen)
{
	if (!session || !session[0]) {
		tgi_snprintf(err, errlen, "a loop window is found by session, and none was given");
		return -1;
	}
	return 0;
}

int tgi_check_bucket(const char *principal, const char *tool, char *err, size_t errlen)
{
	if (!principal || !tool) {
		tgi_snprintf(err, errlen, "a rate-limit bucket is found by principal and tool");
		return -1;
	}
	return 0;
}

int tgi_bucket_step(double stored, int64_t at, int found, int64_t now, double rate,
                    double burst, int want, int *took, double *left)
{
	double tokens = found && stored >= 0 ? stored : (found ? 0 : burst);   /* NaN: empty */
	if (!found)
		at = now;
	if (now > at)
		tokens += (double)(now - at) * rate / 1000;
	if (tokens > burst)
		tokens = burst;
	*took = 0;
	if (tokens >= 1 - TGI_BUCKET_EPSILON) {
		double whole = floor(tokens + TGI_BUCKET_EPSILON);
		*took = whole < (double)want ? (int)whole : want;
		tokens = tokens >= *took ? tokens - *took : 0;
	}
	*left = tokens;
	return *took || !found || now < at || !(stored >= 0);
}

/* Is the fixed field a NUL-terminated string of 1..cap-1 bytes? */
static int field_ok(const char *f, size_t cap)
{
	return f[0] && memchr(f, '\0', cap) != NULL;
}

int tgi_approval_new(tgi_approval_row *row, char *err, size_t errlen)
{
	if (!field_ok(row->tool, sizeof row->tool) || !field_ok(row->principal, sizeof row->principal) ||
	    !memchr(row->binding, '\0', sizeof row->binding) || strlen(row->binding) != 64) {
		tgi_snprintf(err, errlen, "an approval needs a tool, a principal and a 64-character binding");
		return -1;
	}
	if (row->op_id[0] && tgi_check_op_id(row->op_id, err, errlen) < 0)
		return -1;
	if (row->plan) {
		json_t *p = json_loads(row->plan, 0, NULL);
		int ok = json_is_object(p);
		json_decref(p);
		if (!ok) {
			tgi_snprintf(err, errlen, "the plan of an approval for '%s' is not a JSON object",
			             row->tool);
			return -1;
		}
	}
	tgi_uuidv7(row->id);
	tgi_snprintf(row->state, sizeof row->state, "pending");
	row->decided_by[0] = '\0';
	row->decided_ms = 0;
	row->decided_reason = NULL;
	if (!row->created_ms)
		row->created_ms = tgi_unix_ms();
	return 0;
}

int tgi_check_approval_id(const char *id, char *err, size_t errlen)
{
	char q[64];
	if (tgi_uuid_ok(id))
		return 0;
	tgi_snprintf(err, errlen, "no approval '%s'", tgi_quoted(q, sizeof q, id));
	return -1;
}

int tgi_approval_reason(const char *reason, char out[TGI_APPROVAL_REASON_MAX + 1], char *err,
                        size_t errlen)
{
	char clean[3 * TGI_APPROVAL_REASON_MAX + 1]; /* a byte that is not UTF-8 becomes three */
	size_t n = reason ? strlen(reason) : 0;

	out[0] = '\0';
	if (n > TGI_APPROVAL_REASON_MAX) {
		tgi_snprintf(err, errlen, "the reason is too long (%zu bytes; at most %d)", n,
		             TGI_APPROVAL_REASON_MAX);
		return -1;
	}
	tgi_sanitize(clean, sizeof clean, reason);
	const char *p = clean;
	size_t len = strlen(clean);
	while (len && *p == ' ')
		p++, len--;
	while (len && p[len - 1] == ' ')
		len--;
	if (len > TGI_APPROVAL_REASON_MAX) {   /* grown by U+FFFD: cut before a code point */
		len = TGI_APPROVAL_REASON_MAX;
		while (len && ((unsigned char)p[len] & 0xC0) == 0x80)
			len--;
	}
	memcpy(out, p, len);
	out[len] = '\0';
	return 0;
}

int tgi_check_approval_take(const char *binding, const char *principal, char *err, size_t errlen)
{
	if (!binding || !principal) {
		tgi_snprintf(err, errlen, "an approval is taken by binding and principal");
		return -1;
	}
	return 0;
}

int tgi_check_approval_use(const char *id, const char *principal, const char *binding, char *err,
                           size_t errlen)
{
	if (tgi_check_approval_id(id, err, errlen) < 0)
		return -1;
	if (!principal || !binding) {
		tgi_snprintf(err, errlen, "an approval is used by its id, principal and binding");
		return -1;
	}
	return 0;
}

int tgi_check_pin(const char *name, const char *digest, char *err, size_t errlen)
{
	if (!name || !*name || strlen(name) > TGI_PIN_NAME_MAX) {
		tgi_snprintf(err, errlen, "a pinned tool needs a name of 1 to %d bytes", TGI_PIN_NAME_MAX);
		return -1;
	}
	size_t n = digest ? strspn(digest, "0123456789abcdef") : 0;
	if (n != 64 || digest[n]) {
		char q[80];
		tgi_snprintf(err, errlen, "the pin of '%s' is not a sha256 digest in lowercase hex",
		             tgi_quoted(q, sizeof q, name));
		return -1;
	}
	return 0;
}

int tgi_check_messages(const char *session, const char *api, char *err, size_t errlen)
{
	if (!session || !*session) {
		tgi_snprintf(err, errlen, "a conversation is kept by session, and none was given");
		return -1;
	}
	if (api && (!*api || strlen(api) >= TGI_MSG_API_MAX)) {
		tgi_snprintf(err, errlen, "a conversation needs the name of its API");
		return -1;
	}
	return 0;
}

int tgi_eval_text_ok(const char *t)
{
	if (!t)
		return 1;
	if (strlen(t) > TGI_EVAL_TEXT_MAX)
		return 0;
	json_t *j = json_string(t);   /* NULL: not UTF-8 */
	int ok = j != NULL;
	json_decref(j);
	return ok;
}

/* An eval run's text as tgi_eval_text_ok, with a sentence when not. */
static int eval_text_check(const char *what, const char *t, char *err, size_t errlen)
{
	if (tgi_eval_text_ok(t))
		return 0;
	if (strlen(t) > TGI_EVAL_TEXT_MAX)
		tgi_snprintf(err, errlen, "the %s of an eval run is too long (%zu bytes; at most %d)",
		             what, strlen(t), TGI_EVAL_TEXT_MAX);
	else
		tgi_snprintf(err, errlen, "the %s of an eval run is not UTF-8", what);
	return -1;
}

int tgi_check_eval_row(const tgi_eval_row *r, char *err, size_t errlen)
{
	static const char *const checks[5] = { "tool", "valid", "args", "policy", "pass" };
	char q[64];

	if (!r) {
		tgi_snprintf(err, errlen, "no eval run to keep");
		return -1;
	}
	if (!tgi_uuid_ok(r->id)) {
		tgi_snprintf(err, errlen, "eval run id '%s' is not a UUID", tgi_quoted(q, sizeof q, r->id));
		return -1;
	}
	const char *const text[][2] = {
		{ "provider", r->provider }, { "api", r->api }, { "model", r->model },
		{ "profile", r->profile }, { "manifest", r->manifest }, { "suite", r->suite },
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(text); i++) {
		if (eval_text_check(text[i][0], text[i][1], err, errlen) < 0)
			return -1;
	}
	if (r->cases < 0 || r->runs < 0) {
		tgi_snprintf(err, errlen, "eval run %s has a negative count of %s", r->id,
		             r->cases < 0 ? "cases" : "runs");
		return -1;
	}
	for (int i = 0; i < 5; i++) {
		double v = r->score[i];
		if (!isnan(v) && !(v >= 0.0 && v <= 1.0)) {
			tgi_snprintf(err, errlen, "eval run %s has a %s rate of %g, not within 0 to 1", r->id,
			             checks[i], v);
			return -1;
		}
	}
	json_t *rep = r->report ? json_loads(r->report, 0, NULL) : NULL;
	int ok = json_is_object(rep);
	json_decref(rep);
	if (!ok) {
		tgi_snprintf(err, errlen, "the report of eval run %s is not a JSON object", r->id);
		return -1;
	}
	return 0;
}

int64_t tgi_eval_limit(int64_t limit)
{
	return limit < 1 ? INT64_MAX : limit;
}

/* A rate as JSON: null for none. */
static json_t *rate_json(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

json_t *tgi_eval_json(const tgi_eval_row *r)
{
	json_t *scores = json_pack("{s:o, s:o, s:o, s:o, s:o}", "tool", rate_json(r->score[0]),
	                           "valid", rate_json(r->score[1]), "args", rate_json(r->score[2]),
	                           "policy", rate_json(r->score[3]), "pass", rate_json(r->score[4]));
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:o, s:o}",
	                 "id", tgi_val_string(r->id), "ts", tgi_val_time(r->ts_ms),
	                 "provider", tgi_val_string(r->provider), "api", tgi_val_string(r->api),
	                 "model", tgi_val_string(r->model), "profile", tgi_val_string(r->profile),
	                 "manifest", tgi_val_string(r->manifest), "suite", tgi_val_string(r->suite),
	                 "cases", (json_int_t)r->cases, "runs", (json_int_t)r->runs,
	                 "scores", scores, "report", tgi_val_parsed(r->report));
}

int tgi_messages_encode(const json_t *entries, char ***text, size_t *n, char *err, size_t errlen)
{
	*text = NULL;
	*n = 0;
	if (!json_is_array(entries)) {
		tgi_snprintf(err, errlen, "the entries of a conversation come as a JSON array");
		return -1;
	}
	size_t len = json_array_size(entries);
	if (!len)
		return 0;
	char **v = tgi_xcalloc(len, sizeof *v);
	for (size_t i = 0; i < len; i++) {
		if (!(v[i] = json_dumps(json_array_get(entries, i), JSON_COMPACT | JSON_ENCODE_ANY))) {
			tgi_texts_free(v, i);
			tgi_snprintf(err, errlen, "cannot encode entry %zu of the conversation", i);
			return -1;
		}
	}
	*text = v;
	*n = len;
	return 0;
}

void tgi_texts_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

int tgi_event_encode(const char *op_id, tgi_event *ev, char **data, char *err, size_t errlen)
{
	*data = NULL;
	if (!ev || !ev->type || !*ev->type) {
		tgi_snprintf(err, errlen, "an event needs a type");
		return -1;
	}
	ev->seq = 0;
	if (op_id && tgi_check_op_id(op_id, err, errlen) < 0)
		return -1;
	if (ev->data && !(*data = json_dumps(ev->data, JSON_COMPACT | JSON_ENCODE_ANY))) {
		tgi_snprintf(err, errlen, "cannot encode the data of event '%s'", ev->type);
		return -1;
	}
	return 0;
}

/* ---- claim owners ---- */

/* State (field 3) and start time in clock ticks since boot (field 22) of
 * /proc/<pid>/stat.  Fields are counted after the last ')' since the
 * command name in field 2 may hold spaces and parentheses.  0 or -errno. */
static int proc_stat(pid_t pid, char *state, int64_t *start)
{
	char path[64], buf[1024];
	tgi_snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	int e = errno;
	close(fd);
	if (n <= 0)
		return n < 0 ? -e : -EIO;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	for (int field = 3; field <= 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EIO;
		p++;
		if (field == 3)
			*state = *p;
	}
	char *end;
	errno = 0;
	long long v = strtoll(p, &end, 10);
	if (end == p || errno)
		return -EIO;
	*start = v;
	return 0;
}

/* The kernel's boot id (a UUID, 36 characters) into out[37]: 0, or -1
 * when it cannot be read. */
static int boot_id(char out[37])
{
	char buf[64];
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 36)
		return -1;
	buf[36] = '\0';
	if (!tgi_uuid_ok(buf))
		return -1;
	memcpy(out, buf, 37);
	return 0;
}

/* "<hostname>/<boot id>/<pid namespace inode>" into me->host; me->known 0
 * (and "-" for what is missing) when the boot id or the namespace cannot
 * be read: then no row counts as this host's. */
static void self_host(tgi_self *me)
{
	char name[128] = "", boot[37] = "-", ns[24] = "-";
	struct stat st;
	if (gethostname(name, sizeof name - 1) < 0 || !name[0])
		tgi_snprintf(name, sizeof name, "localhost");
	int have_boot = boot_id(boot) == 0;
	int have_ns = stat("/proc/self/ns/pid", &st) == 0;
	if (have_ns)
		tgi_snprintf(ns, sizeof ns, "%llu", (unsigned long long)st.st_ino);
	tgi_snprintf(me->host, sizeof me->host, "%s/%s/%s", name, boot, ns);
	me->known = have_boot && have_ns;
}

void tgi_self_init(tgi_self *me)
{
	memset(me, 0, sizeof *me);
	me->start = -1;
	tgi_self_start(me);
}

int64_t tgi_self_start(tgi_self *me)
{
	pid_t pid = getpid();
	if (pid != me->pid) {
		char state;
		int64_t start;
		me->pid = pid;
		me->start = proc_stat(pid, &state, &start) == 0 ? start : -1;
		self_host(me);   /* a child may be in another pid namespace */
	}
	return me->start;
}

int tgi_owner_same_host(tgi_self *me, const char *host)
{
	tgi_self_start(me);
	return me->known && host && !strcmp(host, me->host);
}

const char *tgi_owner_host_shown(const char *host, char *buf, size_t cap)
{
	const char *h = host ? host : "";
	size_t n = strlen(h);
	/* ".../<36-character boot id or ->/<digits or ->": cut both off */
	const char *ns = memrchr(h, '/', n);
	const char *boot = ns ? memrchr(h, '/', (size_t)(ns - h)) : NULL;
	if (boot && (ns - boot - 1 == 36 || ns - boot - 1 == 1) && ns[1] &&
	    strspn(ns + 1, "0123456789-") == strlen(ns + 1))
		n = (size_t)(boot - h);
	char tmp[256];
	tgi_snprintf(tmp, sizeof tmp, "%.*s", (int)(n < sizeof tmp ? n : sizeof tmp - 1), h);
	return tgi_quoted(buf, cap, tmp);
}

int tgi_owner_here_alive(int64_t pid, int64_t start, int lease_live)
{
	char state;
	int64_t now_start;

	if (pid <= 0 || pid > INT_MAX)
		return 0;
	if (kill((pid_t)pid, 0) < 0 && errno != EPERM)
		return 0;
	int rc = proc_stat((pid_t)pid, &state, &now_start);
	if (rc == -ENOENT || rc == -ESRCH)
		return 0;
	if (rc < 0 || start < 0)
		return lease_live;
	return state != 'Z' && state != 'X' && now_start == start;
}

double tgi_retry_after(int64_t lease_until, int64_t now)
{
	double left = (double)(lease_until - now) / 1000.0;
	return left < TGI_RETRY_MIN_S ? TGI_RETRY_MIN_S
	     : left > TGI_RETRY_MAX_S ? TGI_RETRY_MAX_S
	                              : left;
}

int tgi_applied_envelope(const char *op_id, int had_row, const char *stored, char **out)
{
	json_t *env = had_row && stored ? json_loads(stored, 0, NULL) : NULL;

	*out = NULL;
	if (!had_row) {
		env = json_pack("{s:s, s:s, s:n, s:n, s:s}", "op_id", op_id, "status", "persisted",
		                "error", "output", "note", "settled by operator: applied");
	} else if (json_is_object(env)) {
		json_t *e = json_object_get(env, "error");
		if (json_is_object(e))
			json_object_set_new(e, "applied", json_string("yes"));
		json_object_set_new(env, "note", json_string("settled by operator: applied"));
	} else {
		json_decref(env);
		return 0; /* not an object: leave the stored text as it is */
	}
	*out = env ? json_dumps(env, JSON_COMPACT) : NULL;
	json_decref(env);
	return *out ? 1 : -1;
}

/* ---- UUIDv7 times ---- */

void tgi_uuid_floor(int64_t ms, char out[37])
{
	uint64_t t = ms <= 0 ? 0 : (uint64_t)ms > 0xffffffffffffu ? 0xffffffffffffu : (uint64_t)ms;
	snprintf(out, 37, "%08llx-%04llx-0000-0000-000000000000", (unsigned long long)(t >> 16),
	         (unsigned long long)(t & 0xffff));
}

int64_t tgi_uuid_ms(const char *id)
{
	char hex[13];
	if (!tgi_uuid_ok(id) || id[14] != '7')
		return -1;
	memcpy(hex, id, 8);
	memcpy(hex + 8, id + 9, 4);
	hex[12] = '\0';
	return (int64_t)strtoll(hex, NULL, 16);
}

/* ---- approvals ---- */

void tgi_approval_answer(const char *state, const char *id, int *found, char pending_id[37])
{
	if (!strcmp(state, "approved")) {
		*found = 1;
		if (pending_id)
			tgi_snprintf(pending_id, 37, "%s", id);
	} else if (!strcmp(state, "denied")) {
		*found = -1;
		if (pending_id)
			tgi_snprintf(pending_id, 37, "%s", id);
	} else if (!strcmp(state, "pending")) {
		*found = 2;
		if (pending_id)
			tgi_snprintf(pending_id, 37, "%s", id);
	}
}

int tgi_approval_spendable(const tgi_approval_row *r, const char *principal,
                           const char *binding, int64_t now)
{
	return !strcmp(r->state, "approved") && r->decided_ms != 0 && r->expires_ms > now &&
	       !strcmp(r->principal, principal) && !strcmp(r->binding, binding);
}

void tgi_approval_row_clear(tgi_approval_row *row)
{
	if (!row)
		return;
	free(row->args);
	free(row->reason);
	free(row->plan);
	free(row->decided_reason);
	row->args = row->reason = row->plan = row->decided_reason = NULL;
}

void tgi_approval_rows_free(tgi_approval_row *rows, size_t n)
{
	for (size_t i = 0; rows && i < n; i++)
		tgi_approval_row_clear(&rows[i]);
	free(rows);
}

/* ---- values as JSON ---- */

json_t *tgi_val_string(const char *t)
{
	if (!t)
		return json_null();
	json_t *j = json_string(t);
	return j ? j : json_string("(not UTF-8)");
}

json_t *tgi_val_parsed(const char *t)
{
	json_t *j = t ? json_loads(t, JSON_DECODE_ANY, NULL) : NULL;
	return j ? j : json_null();
}

json_t *tgi_val_time(int64_t ms)
{
	char iso[32];
	tgi_iso8601(ms, iso);
	return json_string(iso);
}

json_t *tgi_unknown_row(const char *op_id, const char *tool, const char *principal,
                        const char *session, const char *status, int64_t started_ms,
                        const char *message, const char *claim, const char *scope)
{
	json_t *o = json_object();
	json_object_set_new(o, "op_id", tgi_val_string(op_id));
	json_object_set_new(o, "tool", tgi_val_string(tool));
	json_object_set_new(o, "principal", tgi_val_string(principal));
	json_object_set_new(o, "session", tgi_val_string(session));
	json_object_set_new(o, "status", tgi_val_string(status));
	json_object_set_new(o, "started", tgi_val_time(started_ms));
	json_object_set_new(o, "message", tgi_val_string(message));
	json_object_set_new(o, "claim", tgi_val_string(claim));
	json_object_set_new(o, "scope", tgi_val_string(scope));
	return o;
}

/* ---- stats ---- */

int tgi_same_tool(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : a == b;
}

static int cmp_tools(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	json_int_t cx = json_integer_value(json_object_get(x, "calls"));
	json_int_t cy = json_integer_value(json_object_get(y, "calls"));
	if (cx != cy)
		return cx > cy ? -1 : 1;
	const char *nx = json_string_value(json_object_get(x, "tool"));
	const char *ny = json_string_value(json_object_get(y, "tool"));
	if (!nx || !ny)
		return !nx - !ny; /* then by name, calls without a tool last */
	return strcmp(nx, ny);
}

void tgi_tools_sort(json_t **v, size_t n)
{
	if (n)
		qsort(v, n, sizeof *v, cmp_tools);
}

json_t *tgi_stats_json(int64_t since_ms, json_int_t calls, json_t *tools, json_t *denials)
{
	char iso[32];
	if (since_ms > 0)
		tgi_iso8601(since_ms, iso);
	return json_pack("{s:o, s:I, s:o, s:o}", "since", since_ms > 0 ? json_string(iso) : json_null(),
	                 "calls", calls, "tools", tools, "denials", denials);
}
