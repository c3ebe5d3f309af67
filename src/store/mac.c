/*
 * mac.c — the MACs that give a ledger's rows their authority.
 *
 * A ledger is only as trustworthy as whoever can write its file or its
 * database.  A repository can ship a .toolgate/ of its own, and anyone with
 * database access can insert rows; so a row that lets something happen
 * without a human (an approval's decision, a `done` idempotency claim that
 * makes a call a replay, a rate-limit bucket, a pinned description) counts
 * only when its MAC verifies under a key the writer cannot have: derived
 * from the machine key (key.c), which lives outside every workspace, and
 * from the ledger's identity, so that a row copied between two ledgers of
 * one machine verifies in neither but its own.
 *
 *   row key  = HMAC(machine key, "toolgate row key\0"  ledger id)
 *   mask key = HMAC(machine key, "toolgate mask key\0" ledger id)
 *   row MAC  = HMAC(row key, domain \0 (len64 field)*)   (hex)
 *   identity = HMAC(machine key, "toolgate ledger identity\0"
 *                   (len64 field)* of id, bound, created_ms)   (hex)
 *
 * Each field is prefixed by its length (all ones for NULL), so no two
 * different rows give one input.  Verification compares in constant time.
 *
 * Owns: the derivation and the MACs.  Must not: load the key (key.c), or
 * know any table.
 */
#include "store/impl.h"
#include "util/util.h"

#include <string.h>

static void derive(const unsigned char machine[TGI_KEY_BYTES], const char *label,
                   const char *ledger_id, unsigned char out[TGI_KEY_BYTES])
{
	tgi_hmac h;
	tgi_hmac_init(&h, machine, TGI_KEY_BYTES);
	tgi_hmac_update(&h, label, strlen(label) + 1);
	tgi_hmac_update(&h, ledger_id, strlen(ledger_id));
	tgi_hmac_final(&h, out);
}

void tgi_store_keys_derive(tgi_store *s, const unsigned char machine[TGI_KEY_BYTES],
                           const char *ledger_id)
{
	tgi_snprintf(s->ledger_id, sizeof s->ledger_id, "%s", ledger_id);
	derive(machine, "toolgate row key", ledger_id, s->row_key);
	derive(machine, "toolgate mask key", ledger_id, s->mask_key);
	s->keyed = 1;
}

/* One field, length-prefixed (all ones for NULL). */
static void field(tgi_hmac *h, const char *f)
{
	uint64_t len = f ? (uint64_t)strlen(f) : UINT64_MAX;
	unsigned char be[8];
	for (int b = 0; b < 8; b++)
		be[b] = (unsigned char)(len >> (56 - 8 * b));
	tgi_hmac_update(h, be, sizeof be);
	if (f)
		tgi_hmac_update(h, f, (size_t)len);
}

void tgi_ident_mac(const unsigned char machine[TGI_KEY_BYTES], const tgi_ledger_ident *id,
                   char out[65])
{
	static const char domain[] = "toolgate ledger identity";
	char ms[32];
	unsigned char mac[32];
	tgi_hmac h;
	tgi_snprintf(ms, sizeof ms, "%lld", (long long)id->created_ms);
	tgi_hmac_init(&h, machine, TGI_KEY_BYTES);
	tgi_hmac_update(&h, domain, sizeof domain);
	field(&h, id->id);
	field(&h, id->bound);
	field(&h, ms);
	tgi_hmac_final(&h, mac);
	tgi_hex(mac, sizeof mac, out);
}

static void mac_raw(const tgi_store *s, const char *domain, const char *const *fields, size_t n,
                    unsigned char mac[32])
{
	tgi_hmac h;
	tgi_hmac_init(&h, s->row_key, sizeof s->row_key);
	tgi_hmac_update(&h, domain, strlen(domain) + 1);
	for (size_t i = 0; i < n; i++)
		field(&h, fields[i]);
	tgi_hmac_final(&h, mac);
}

void tgi_store_mac(const tgi_store *s, const char *domain, const char *const *fields, size_t n,
                   char out[65])
{
	unsigned char mac[32];
	if (!s->keyed) {
		out[0] = 0;
		return;
	}
	mac_raw(s, domain, fields, n, mac);
	tgi_hex(mac, sizeof mac, out);
}

int tgi_store_mac_ok(const tgi_store *s, const char *domain, const char *const *fields,
                     size_t n, const char *mac)
{
	char want[65];
	if (!s->keyed || !mac || strlen(mac) != 64)
		return 0;
	tgi_store_mac(s, domain, fields, n, want);
	return tgi_ct_equal(want, mac, 64);
}
