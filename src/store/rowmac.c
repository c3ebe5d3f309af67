/*
 * rowmac.c — which fields of each kind of row its MAC covers (mac.c
 * computes it), alike in both stores, so that a row written by one gate
 * verifies in every other that holds the key.
 *
 *   approval  "approval": id, op_id, tool, principal, binding, state,
 *             created_ms, expires_ms, decided_by, decided_ms
 *             (written when it is decided and when it is used: a used
 *             row's MAC is over "used", so the approved one is gone)
 *   idem      "idem": scope, op_id, binding, state, and for `done` the
 *             sha256 of the op's stored envelope (a replay returns only
 *             the envelope the gate wrote); in_flight and done rows carry
 *             one, unknown rows none (they run nothing and replay nothing)
 *   bucket    "bucket": principal, tool, tokens (%.17g), updated_ms
 *   pin       "pin": name, digest
 *
 * What is not covered gives no authority: a claim's owner and lease (a
 * row whose owner looks alive is only `pending`), reasons, args, plans.
 *
 * Owns: the field lists.  Must not: read or write a row.
 */
#include "store/impl.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

static void num(char out[24], int64_t v)
{
	snprintf(out, 24, "%lld", (long long)v);
}

void tgi_mac_approval(const tgi_store *s, const tgi_approval_row *r, const char *state,
                      char out[65])
{
	char created[24], expires[24], decided[24];
	num(created, r->created_ms);
	num(expires, r->expires_ms);
	num(decided, r->decided_ms);
	const char *f[] = {r->id, r->op_id[0] ? r->op_id : NULL, r->tool, r->principal,
	                   r->binding, state, created, expires,
	                   r->decided_by[0] ? r->decided_by : NULL, decided};
	tgi_store_mac(s, "approval", f, TGI_ARRAY_LEN(f), out);
}

int tgi_mac_approval_ok(const tgi_store *s, const tgi_approval_row *r, const char *mac)
{
	char want[65];
	if (!s->keyed || !mac || strlen(mac) != 64)
		return 0;
	tgi_mac_approval(s, r, r->state, want);
	return tgi_ct_equal(want, mac, 64);
}

void tgi_mac_idem(const tgi_store *s, const char *scope, const char *op_id, const char *binding,
                  const char *state, const char *envelope, char out[65])
{
	char sha[65];
	if (envelope)
		tgi_sha256_hex(envelope, strlen(envelope), sha);
	const char *f[] = {scope, op_id, binding && *binding ? binding : NULL, state,
	                   envelope ? sha : NULL};
	tgi_store_mac(s, "idem", f, TGI_ARRAY_LEN(f), out);
}

int tgi_mac_idem_ok(const tgi_store *s, const char *scope, const char *op_id,
                    const char *binding, const char *state, const char *envelope,
                    const char *mac)
{
	char want[65];
	if (!s->keyed || !mac || strlen(mac) != 64)
		return 0;
	tgi_mac_idem(s, scope, op_id, binding, state, envelope, want);
	return tgi_ct_equal(want, mac, 64);
}

void tgi_mac_bucket(const tgi_store *s, const char *principal, const char *tool, double tokens,
                    int64_t updated_ms, char out[65])
{
	char t[40], u[24];
	snprintf(t, sizeof t, "%.17g", tokens);
	num(u, updated_ms);
	const char *f[] = {principal, tool, t, u};
	tgi_store_mac(s, "bucket", f, TGI_ARRAY_LEN(f), out);
}

int tgi_mac_bucket_ok(const tgi_store *s, const char *principal, const char *tool,
                      double tokens, int64_t updated_ms, const char *mac)
{
	char want[65];
	if (!s->keyed || !mac || strlen(mac) != 64)
		return 0;
	tgi_mac_bucket(s, principal, tool, tokens, updated_ms, want);
	return tgi_ct_equal(want, mac, 64);
}

void tgi_mac_pin(const tgi_store *s, const char *name, const char *digest, char out[65])
{
	const char *f[] = {name, digest};
	tgi_store_mac(s, "pin", f, TGI_ARRAY_LEN(f), out);
}

int tgi_mac_pin_ok(const tgi_store *s, const char *name, const char *digest, const char *mac)
{
	const char *f[] = {name, digest};
	return tgi_store_mac_ok(s, "pin", f, TGI_ARRAY_LEN(f), mac);
}
