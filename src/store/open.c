/*
 * open.c — opening the ledger a configuration names (store.h
 * tgi_store_open_for): what a gate (tg_gate_open) and the ledger commands
 * (tg_ledger_open) do alike.  The configuration says where the ledger is
 * (the backend follows from it: store.c), how it syncs and where the
 * machine key comes from; the caller says whether a ledger file must be
 * there already, whether the workspace's state directory is checked (and
 * made) first, and passes the store's own flags through.
 *
 * Where the ledger is, shown in a sentence (tgi_ledger_shown_where), is
 * here too: a gate and the ledger commands name it alike, and a URL's
 * credentials never leave.
 *
 * Owns: the flags a configuration implies and the read-only commands'
 * stand-in for a ledger file that is not there.  Must not: load or keep
 * the configuration, or open the database itself (store.c does).
 */
#include "config.h"
#include "store/store.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A SQLite ledger: check (and make) the workspace's state directory as a
 * gate does before it opens its ledger. */
static int state_dir(const char *workspace, char *err, size_t errlen)
{
	int ws = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (ws < 0) {
		char shown[PATH_MAX];
		tgi_sanitize(shown, sizeof shown, workspace);
		tgi_snprintf(err, errlen, "workspace \"%s\": %s", shown, strerror(errno));
		return -1;
	}
	int fd = tgi_state_dir_open(ws, workspace, err, errlen);
	close(ws);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

int tgi_store_open_for(const struct tgi_config *cfg, int flags, tgi_store **out, int *missing,
                       char *err, size_t errlen)
{
	const char *where = cfg->store;   /* $TOOLGATE_STORE already applied */
	int file = !tgi_store_is_url(where);
	int existing = (flags & TGI_STORE_EXISTING) && file;
	struct stat st;
	int none = existing && lstat(where, &st) < 0 && errno == ENOENT;
	int sflags = (flags & ~(TGI_STORE_EXISTING | TGI_STORE_STATE_DIR)) |
	             (cfg->sync_full ? TGI_STORE_SYNC_FULL : 0) |
	             (none ? TGI_STORE_MEMORY : existing ? TGI_STORE_MUST_EXIST : 0);
	tgi_key_source key = { .env = cfg->key_env, .file = cfg->key_file };

	*out = NULL;
	if (missing)
		*missing = none;
	if (file && !existing && (flags & TGI_STORE_STATE_DIR) &&
	    state_dir(cfg->workspace, err, errlen) < 0)
		return -1;
	return tgi_store_open_keyed(where, sflags, &key, out, err, errlen);
}

/* ---- where the ledger is, as a sentence shows it ---- */

/* The last '@' of the n bytes at s, or NULL. */
static const char *last_at(const char *s, size_t n)
{
	const char *at = NULL;
	for (const char *p = s; p < s + n; p++)
		if (*p == '@')
			at = p;
	return at;
}

void tgi_ledger_shown_where(const char *where, char *out, size_t cap)
{
	if (!where || !tgi_store_is_url(where) || !strstr(where, "://")) {
		tgi_sanitize(out, cap, where ? where : "");
		return;
	}
	tgi_buf b;
	tgi_buf_init(&b, 4096);
	const char *rest = strstr(where, "://") + 3;
	/* the authority ends at the first '/' (a '?' or '#' in a password does
	 * not end it, as libpq reads it); an '@' after it (a '/' in a password)
	 * is cut at too, before the query: never show what came before it */
	size_t alen = strcspn(rest, "/");
	const char *at = last_at(rest, alen);
	if (!at)
		at = last_at(rest, alen + strcspn(rest + alen, "?#"));
	const char *host = at ? at + 1 : rest;
	size_t hlen = strcspn(host, "?#");
	tgi_buf_append(&b, where, (size_t)(rest - where));
	tgi_buf_append(&b, host, hlen);
	const char *q = host + hlen;
	char sep = '?';
	while (*q == '?' || *q == '&') {
		q++;
		size_t n = strcspn(q, "&#");
		if (!strncmp(q, "host=", 5) || !strncmp(q, "port=", 5)) {
			tgi_buf_append(&b, &sep, 1);
			tgi_buf_append(&b, q, n);
			sep = '&';
		}
		q += n;
	}
	tgi_sanitize(out, cap, b.p ? b.p : "");
	tgi_buf_free(&b);
}
