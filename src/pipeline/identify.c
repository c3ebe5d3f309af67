/*
 * identify.c — stage 3: who is calling.
 *
 * The claimed principal comes from the transport (--as), else
 * $TOOLGATE_PRINCIPAL, else the principal whose token matches the presented
 * token ($TOOLGATE_TOKEN), else default_principal.  A principal that
 * declares token_env is only granted to a caller presenting the token held
 * in that variable (compared in constant time); if the variable is unset
 * nobody gets it.  Unknown principal: denied (fail closed).
 *
 * Owns: the principal and its roles for this call.  Must not: look at the
 * tool or arguments.  Stops with `denied`.
 */
#include <stdlib.h>
#include <string.h>

#include "gate/gate.h"
#include "util/util.h"

static int token_equal(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	unsigned char d = na != nb;
	for (size_t i = 0; i < na; i++)
		d |= (unsigned char)(a[i] ^ b[i % (nb ? nb : 1)]);
	return d == 0 && nb != 0;
}

static const tgi_principal_cfg *find(const tgi_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nprincipals; i++)
		if (!strcmp(cfg->principals[i].name, name))
			return &cfg->principals[i];
	return NULL;
}

const char *tgi_principal_names(const tgi_config *cfg, char *out, size_t cap)
{
	const char **v = tgi_xcalloc(cfg->nprincipals + 1, sizeof *v);
	for (size_t i = 0; i < cfg->nprincipals; i++)
		v[i] = cfg->principals[i].name;
	tgi_names_join(out, cap, v, cfg->nprincipals);
	free(v);
	return out;
}

static const char *token_owner(const tgi_config *cfg, const char *token)
{
	for (size_t i = 0; i < cfg->nprincipals; i++) {
		const tgi_principal_cfg *p = &cfg->principals[i];
		const char *want = p->token_env ? getenv(p->token_env) : NULL;
		if (want && *want && token_equal(token, want))
			return p->name;
	}
	return NULL;
}

/* The principal claimed (its name as claimed into shown) and whether its
 * token holds: 1 ok, 0 unknown principal, -1 a bad or missing token. */
static int resolve(const tgi_config *cfg, const char *name, const char *token,
                   const tgi_principal_cfg **out, char *shown, size_t cap)
{
	if (!token)
		token = getenv("TOOLGATE_TOKEN");
	if (!name || !*name)
		name = getenv("TOOLGATE_PRINCIPAL");
	if ((!name || !*name) && token && *token)
		name = token_owner(cfg, token);
	if (!name || !*name)
		name = cfg->default_principal;

	tgi_sanitize(shown, cap, name ? name : "");
	const tgi_principal_cfg *p = name ? find(cfg, name) : NULL;
	*out = p;
	if (!p)
		return 0;
	if (p->token_env) {
		const char *want = getenv(p->token_env);
		if (!want || !*want || !token || !token_equal(token, want))
			return -1;
	}
	return 1;
}

const tgi_principal_cfg *tgi_principal_of(tg_gate *g, const char *principal, const char *token)
{
	const tgi_principal_cfg *p;
	char shown[129];
	/* a presented token must be someone's: it never falls back to the default */
	if ((!principal || !*principal) && token && *token &&
	    !(principal = token_owner(g->cfg, token)))
		return NULL;
	return resolve(g->cfg, principal, token, &p, shown, sizeof shown) == 1 ? p : NULL;
}

tgi_verdict tgi_identify(tgi_call *c)
{
	const tgi_principal_cfg *p;
	int rc = resolve(c->g->cfg, c->req->principal, c->req->token, &p, c->principal_name,
	                 sizeof c->principal_name);
	if (rc == 0) {
		char names[512];
		tgi_trace(c, "identify", 0, json_pack("{s:s}", "principal", c->principal_name));
		return tgi_stop(c, TG_DENIED, TG_ERR_NOT_PERMITTED, NULL,
		                "unknown principal \"%s\" (the configuration has %s); do not retry; "
		                "ask the owner", c->principal_name, tgi_principal_names(c->g->cfg, names,
		                                                                     sizeof names));
	}
	if (rc < 0) {
		const char *want = getenv(p->token_env);
		tgi_trace(c, "identify", 0, json_pack("{s:s}", "principal", p->name));
		/* how a caller presents it: a bearer token over HTTP, else $TOOLGATE_TOKEN */
		return tgi_stop(c, TG_DENIED, TG_ERR_NOT_PERMITTED, NULL,
		                "principal \"%s\" needs a valid token%s%s; do not retry; ask the owner",
		                p->name, want && *want ? "" : " and none is configured (its token_env "
		                "variable is unset)", !want || !*want ? ""
		                : c->req->token ? " (an HTTP client presents it as its bearer token)"
		                : " (a CLI or stdio caller sets TOOLGATE_TOKEN to it)");
	}
	c->principal = p;
	tgi_trace(c, "identify", 1, json_pack("{s:s}", "principal", p->name));
	return TGI_NEXT;
}
