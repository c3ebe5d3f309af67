/*
 * identity.c — whose ledger this is (store.h "The ledger's identity").
 *
 * A ledger is a file in the workspace, or a database others can write: a
 * repository can carry a .toolgate/ of its own, and anyone with database
 * access can insert rows.  So a ledger has one identity, made with it:
 *
 *   id          a UUIDv7 (the row and mask keys are derived from it, mac.c)
 *   bound       SQLite: the ledger file's real path, so that a copy at
 *               another path (A's .toolgate copied into workspace B) is
 *               another ledger; PostgreSQL: "postgresql database NAME" --
 *               not a host, since a fleet's gates reach one database under
 *               several host names, but the name, which tells two ledgers
 *               of one server (and one key) apart
 *   created_ms  when
 *   mac         HMAC under the machine key (key.c) of the three
 *
 * At open, the identity must verify under this machine's key and be bound
 * here; then the store is keyed (tgi_store_keys_derive).  Otherwise the
 * ledger is foreign and refused with a sentence: what was found, and what
 * to do (look, then `toolgate ledger adopt`, or move it away).  A new
 * ledger gets its identity in the transaction that finds it empty, so a
 * ledger with records but no identity (made before identities, or by
 * hand) is foreign too.
 *
 * Adopting gives a foreign ledger a new identity bound here.  It re-signs
 * nothing: the rows already there keep MACs made under another key (or
 * none), which do not verify under the new one, so they carry no
 * authority; their history stays readable.
 *
 * Owns: the identity's checks, its sentences and adoption.  Must not: know
 * SQL (each store reads and writes the row: impl.h ident_*), or keep the
 * machine key past the call that loaded it.
 */
#include "store/impl.h"
#include "util/util.h"

#include <string.h>
#include <stdarg.h>
#include <stdio.h>

static const char *const tail_file =
	": it may have arrived with a repository; look at it with `toolgate log`, then "
	"`toolgate ledger adopt` to take it on (its history stays, and carries no authority), "
	"or move it away";
static const char *const tail_db =
	": someone with access to the database may have written it, or it belongs to another "
	"fleet's key; look at it with `toolgate log`, then `toolgate ledger adopt` to take it on "
	"(its history stays, and carries no authority), or use another database";

static const char *tail(const tgi_store *s)
{
	return tgi_store_shared(s) ? tail_db : tail_file;
}

/* Mark s foreign with a sentence (fmt is its first part; the tail says
 * what to do).  With foreign_ok it stays open, unkeyed; else -1 with err. */
__attribute__((format(printf, 5, 6)))
static int foreign(tgi_store *s, int flags, char *err, size_t errlen, const char *fmt, ...)
{
	char what[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	tgi_snprintf(s->foreign, sizeof s->foreign, "%s%s", what, tail(s));
	s->keyed = 0;
	explicit_bzero(s->row_key, sizeof s->row_key);
	explicit_bzero(s->mask_key, sizeof s->mask_key);
	if (flags & TGI_STORE_FOREIGN_OK)
		return 0;
	tgi_snprintf(err, errlen, "%s", s->foreign);
	return -1;
}

/* A new identity for s, bound here, MACed under machine. */
static int make_ident(tgi_store *s, const unsigned char machine[TGI_KEY_BYTES],
                      tgi_ledger_ident *id, char *err, size_t errlen)
{
	memset(id, 0, sizeof *id);
	if (s->impl->ident_bound(s, id->bound, sizeof id->bound, err, errlen) < 0)
		return -1;
	tgi_uuidv7(id->id);
	id->created_ms = tgi_unix_ms();
	tgi_ident_mac(machine, id, id->mac);
	return 0;
}

/* An in-memory store: a random key and id of its own, never seen again. */
static void one_off(tgi_store *s)
{
	unsigned char machine[TGI_KEY_BYTES];
	char hex[2 * TGI_KEY_BYTES + 1], id[37];
	tgi_random_hex(hex, TGI_KEY_BYTES);
	tgi_hmac_sha256(hex, strlen(hex), "toolgate one-off key", 20, machine);
	tgi_uuidv7(id);
	tgi_store_keys_derive(s, machine, id);
	explicit_bzero(machine, sizeof machine);
	explicit_bzero(hex, sizeof hex);
}

/* Check the identity read against this machine's key and place. */
static int check(tgi_store *s, const unsigned char machine[TGI_KEY_BYTES],
                 const tgi_ledger_ident *id, int flags, char *err, size_t errlen)
{
	char here[sizeof id->bound], want[65], shown[512], bound[512];
	if (s->impl->ident_bound(s, here, sizeof here, err, errlen) < 0)
		return -1;
	tgi_quoted(shown, sizeof shown, s->impl->shown(s));
	tgi_quoted(bound, sizeof bound, id->bound);
	tgi_ident_mac(machine, id, want);
	if (strlen(id->mac) != 64 || !tgi_uuid_ok(id->id) || !tgi_ct_equal(want, id->mac, 64))
		return foreign(s, flags, err, errlen,
		               "the ledger %s was not made by this machine's key (its identity is "
		               "bound to %s), or was made by a gate that used another key (another "
		               "$XDG_STATE_HOME, ledger.key_file or ledger.key_env)", shown, bound);
	if (strcmp(here, id->bound))
		return foreign(s, flags, err, errlen,
		               "the ledger %s is a copy of another ledger (its identity is bound to %s)",
		               shown, bound);
	tgi_store_keys_derive(s, machine, id->id);
	s->foreign[0] = '\0';
	return 0;
}

int tgi_identity_check(tgi_store *s, const tgi_key_source *key, int flags, char *err,
                       size_t errlen)
{
	unsigned char machine[TGI_KEY_BYTES];
	tgi_ledger_ident id;
	char shown[512], why[768];
	int found = 0, made = 0, rc;

	TGI_STORE_HELD(s);
	if (flags & TGI_STORE_MEMORY) {
		one_off(s);
		return 0;
	}
	if (tgi_key_load(key, machine, why, sizeof why) < 0) {
		if (!(flags & TGI_STORE_FOREIGN_OK)) {
			tgi_snprintf(err, errlen, "%s", why);
			return -1;
		}
		/* a reader without the key reads unkeyed: nothing verifies */
		s->keyed = 0;
		tgi_snprintf(s->foreign, sizeof s->foreign, "%s", why);
		return 0;
	}
	rc = s->impl->ident_get(s, &id, &found, err, errlen);
	if (rc == 0 && !found) {
		tgi_ledger_ident fresh;
		rc = make_ident(s, machine, &fresh, err, errlen);
		if (rc == 0)
			rc = s->impl->ident_put(s, &fresh, 0, &made, NULL, err, errlen);
		if (rc == 0 && made >= 0)   /* ours, or another process's made meanwhile */
			rc = s->impl->ident_get(s, &id, &found, err, errlen);
	}
	if (rc == 0 && made < 0) {
		tgi_quoted(shown, sizeof shown, s->impl->shown(s));
		rc = foreign(s, flags, err, errlen,
		             "the ledger %s holds records but has no identity (it was made before "
		             "ledgers had one, or by hand)", shown);
	} else if (rc == 0 && !found) {
		tgi_snprintf(err, errlen, "the ledger's identity was made but cannot be read back");
		rc = -1;
	} else if (rc == 0) {
		rc = check(s, machine, &id, flags, err, errlen);
	}
	explicit_bzero(machine, sizeof machine);
	return rc;
}

const char *tgi_store_foreign(const tgi_store *s)
{
	return s && s->foreign[0] ? s->foreign : NULL;
}

const unsigned char *tgi_store_mask_key(const tgi_store *s)
{
	return s && s->keyed ? s->mask_key : NULL;
}

int tgi_identity_adopt(tgi_store *s, const tgi_key_source *key, tgi_ledger_rows *rows,
                       char *err, size_t errlen)
{
	unsigned char machine[TGI_KEY_BYTES];
	tgi_ledger_ident id;
	char shown[512];
	int made = 0, v = 0;

	TGI_STORE_HELD(s);
	memset(rows, 0, sizeof *rows);
	if (s->impl->schema_version(s, &v, err, errlen) < 0)
		return -1;
	if (v != TGI_STORE_SCHEMA_VERSION) {
		tgi_snprintf(err, errlen,
		             "the ledger is at schema version %d: run `toolgate migrate` first", v);
		return -1;
	}
	tgi_quoted(shown, sizeof shown, s->impl->shown(s));
	if (s->keyed) {
		tgi_snprintf(err, errlen,
		             "the ledger %s is this machine's already: nothing to adopt (adopting it "
		             "would only take the authority of its approvals and claims)", shown);
		return -1;
	}
	if (tgi_key_load(key, machine, err, errlen) < 0)
		return -1;
	int rc = make_ident(s, machine, &id, err, errlen);
	if (rc == 0)
		rc = s->impl->ident_put(s, &id, 1, &made, rows, err, errlen);
	if (rc == 0) {
		tgi_store_keys_derive(s, machine, id.id);
		s->foreign[0] = '\0';
	}
	explicit_bzero(machine, sizeof machine);
	return rc;
}
