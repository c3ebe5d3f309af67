/*
 * key.c — the machine key: the secret under which a ledger's identity and
 * the rows that carry authority are MACed (src/store/mac.c), kept where
 * no workspace reaches.
 *
 * Where it comes from, first found wins:
 *   ledger.key_env   the named environment variable holds 64 hex digits
 *                    (a fleet's key, handed to each gate by its service
 *                    manager); set but malformed or empty is an error
 *   ledger.key_file  a file of 64 hex digits (a fleet's key on disk)
 *   default          $XDG_STATE_HOME/toolgate/key (else
 *                    ~/.local/state/toolgate/key): the directory 0700, the
 *                    file 0600, made on first use from getrandom(2)
 * A key file is opened without following a symlink and must be a regular
 * file of this user, readable by nobody else (a key others can read is no
 * secret); the default directory must be this user's and closed to others.
 * Two processes making the default key at once agree on one: each writes
 * a private temporary file and links it into place, and the loser reads
 * the winner's.
 *
 * A key read from the environment is taken out of what other processes of
 * this user can read: the variable is set again (a copy on the heap, which
 * getenv finds) and its text in the process's first environment block
 * (what /proc/PID/environ shows, to a hook the gate starts too) is
 * overwritten with zeros.  Hooks are not given the variable (hooks.c).
 *
 * Owns: finding, checking, making and reading the key.  Must not: keep it
 * anywhere but the caller's buffer, print it, or hand it to a child.
 */
#include "store/impl.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* 64 hex digits (then only white space) into key: 0, or -1. */
static int parse_key(const char *text, size_t n, unsigned char key[TGI_KEY_BYTES])
{
	while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ' ||
	             text[n - 1] == '\t'))
		n--;
	if (n != 2 * TGI_KEY_BYTES)
		return -1;
	return tgi_unhex(text, TGI_KEY_BYTES, key);
}

/* Read the key file at path (checked as the top says). */
static int read_key_file(const char *path, unsigned char key[TGI_KEY_BYTES], char *err,
                         size_t errlen)
{
	char shown[256], text[2 * TGI_KEY_BYTES + 8];
	struct stat st;
	tgi_sanitize(shown, sizeof shown, path);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		tgi_snprintf(err, errlen, "the ledger key %s cannot be opened (%s)", shown,
		             errno == ELOOP ? "it is a symlink" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		tgi_snprintf(err, errlen, "the ledger key %s is not a regular file", shown);
		return -1;
	}
	if (st.st_uid != geteuid()) {
		close(fd);
		tgi_snprintf(err, errlen,
		             "the ledger key %s belongs to uid %u, not to this user (uid %u); a key "
		             "must be the gate's own",
		             shown, (unsigned)st.st_uid, (unsigned)geteuid());
		return -1;
	}
	if (st.st_mode & 077) {
		close(fd);
		tgi_snprintf(err, errlen,
		             "the ledger key %s can be read by others (mode %04o); `chmod 600` it, and "
		             "make a new key if anyone else may have read it",
		             shown, (unsigned)(st.st_mode & 07777));
		return -1;
	}
	ssize_t n = read(fd, text, sizeof text);
	close(fd);
	int rc = n > 0 ? parse_key(text, (size_t)n, key) : -1;
	explicit_bzero(text, sizeof text);
	if (rc < 0)
		tgi_snprintf(err, errlen, "the ledger key %s does not hold 64 hex digits", shown);
	return rc;
}

/* The default key's directory into dir: $XDG_STATE_HOME/toolgate when that
 * is an absolute path, else ~/.local/state/toolgate. */
static int default_dir(char *dir, size_t cap, char *err, size_t errlen)
{
	const char *state = getenv("XDG_STATE_HOME");
	if (state && state[0] == '/') {
		if ((size_t)snprintf(dir, cap, "%s/toolgate", state) >= cap)
			goto too_long;
		return 0;
	}
	const char *home = getenv("HOME");
	if (!home || home[0] != '/')
		home = tgi_passwd_home();
	if (!home || home[0] != '/') {
		tgi_snprintf(err, errlen,
		             "no place for the ledger key: neither $XDG_STATE_HOME nor a home "
		             "directory is set; set one, or name a key with ledger.key_file");
		return -1;
	}
	if ((size_t)snprintf(dir, cap, "%s/.local/state/toolgate", home) >= cap)
		goto too_long;
	return 0;
too_long:
	tgi_snprintf(err, errlen, "the ledger key's directory path is too long");
	return -1;
}

/* mkdir -p of dir's missing parts (0700 for each made). */
static int make_dirs(char *dir, char *err, size_t errlen)
{
	char shown[256];
	for (char *p = dir + 1;; p++) {
		if (*p != '/' && *p)
			continue;
		char c = *p;
		*p = 0;
		int rc = mkdir(dir, 0700);
		*p = c;
		if (rc < 0 && errno != EEXIST) {
			tgi_sanitize(shown, sizeof shown, dir);
			tgi_snprintf(err, errlen, "the ledger key's directory %s cannot be made (%s)",
			             shown, strerror(errno));
			return -1;
		}
		if (!c)
			return 0;
	}
}

/* The default directory, made if missing, must be this user's own and
 * closed to others. */
static int check_dir(char *dir, char *err, size_t errlen)
{
	char shown[256];
	struct stat st;
	if (make_dirs(dir, err, errlen) < 0)
		return -1;
	tgi_sanitize(shown, sizeof shown, dir);
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		tgi_snprintf(err, errlen, "the ledger key's directory %s is not a directory", shown);
		return -1;
	}
	if (st.st_uid != geteuid()) {
		tgi_snprintf(err, errlen,
		             "the ledger key's directory %s belongs to uid %u, not to this user",
		             shown, (unsigned)st.st_uid);
		return -1;
	}
	if (st.st_mode & 077 && chmod(dir, 0700) < 0) {
		tgi_snprintf(err, errlen, "the ledger key's directory %s is open to others (mode %04o)",
		             shown, (unsigned)(st.st_mode & 07777));
		return -1;
	}
	return 0;
}

/* Make the default key at path (none there yet): a private temporary file,
 * written and flushed, linked into place; EEXIST means another process was
 * first, and its key is the one. */
static int make_key(const char *dir, const char *path, char *err, size_t errlen)
{
	unsigned char key[TGI_KEY_BYTES];
	char tmp[PATH_MAX], text[2 * TGI_KEY_BYTES + 2];
	if (getrandom(key, sizeof key, 0) != (ssize_t)sizeof key) {
		tgi_snprintf(err, errlen, "no randomness for a ledger key (%s)", strerror(errno));
		return -1;
	}
	tgi_hex(key, sizeof key, text);
	explicit_bzero(key, sizeof key);
	strcat(text, "\n");
	tgi_snprintf(tmp, sizeof tmp, "%s/.key.%ld", dir, (long)getpid());
	unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text) && fsync(fd) == 0;
	explicit_bzero(text, sizeof text);
	if (fd >= 0)
		close(fd);
	int linked = ok && link(tmp, path) == 0;
	int e = errno;
	unlink(tmp);
	if (linked || (ok && e == EEXIST)) {
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
		return 0;
	}
	char shown[256];
	tgi_sanitize(shown, sizeof shown, path);
	tgi_snprintf(err, errlen, "the ledger key %s cannot be made (%s)", shown, strerror(e));
	return -1;
}

int tgi_key_default_dir(char *out, size_t cap)
{
	char err[256];
	return default_dir(out, cap, err, sizeof err);
}

extern char **environ;

/* The key in variable name: moved off the first environment block (see the
 * top).  glibc's setenv never frees the string it replaces, so the old
 * text stays ours to zero. */
static void env_scrub(const char *name)
{
	size_t n = strlen(name);
	for (char **e = environ; e && *e; e++) {
		char *old = *e;
		if (strncmp(old, name, n) || old[n] != '=')
			continue;
		char *copy = tgi_strdup(old + n + 1);
		if (setenv(name, copy, 1) == 0 && getenv(name) != old + n + 1)
			explicit_bzero(old + n + 1, strlen(old + n + 1));
		explicit_bzero(copy, strlen(copy));
		free(copy);
		return;
	}
}

int tgi_key_load(const tgi_key_source *src, unsigned char key[TGI_KEY_BYTES], char *err,
                 size_t errlen)
{
	if (src && src->env && src->env[0]) {
		const char *v = getenv(src->env);
		char shown[128];
		tgi_sanitize(shown, sizeof shown, src->env);
		if (!v || !v[0]) {
			tgi_snprintf(err, errlen,
			             "ledger.key_env names $%s, which is not set: the ledger key is "
			             "missing", shown);
			return -1;
		}
		if (parse_key(v, strlen(v), key) < 0) {
			tgi_snprintf(err, errlen, "$%s (ledger.key_env) does not hold 64 hex digits",
			             shown);
			return -1;
		}
		env_scrub(src->env);
		return 0;
	}
	if (src && src->file && src->file[0])
		return read_key_file(src->file, key, err, errlen);

	char dir[PATH_MAX - 8], path[PATH_MAX];
	if (default_dir(dir, sizeof dir, err, errlen) < 0 || check_dir(dir, err, errlen) < 0)
		return -1;
	tgi_snprintf(path, sizeof path, "%s/key", dir);
	struct stat st;
	if (lstat(path, &st) < 0 && errno == ENOENT && make_key(dir, path, err, errlen) < 0)
		return -1;
	return read_key_file(path, key, err, errlen);
}
