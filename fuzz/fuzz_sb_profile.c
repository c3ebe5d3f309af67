/*
 * fuzz_sb_profile.c — arbitrary bytes as YAML into tgi_sb_profile_parse,
 * the sandbox profile parser command tools and bridged servers reuse: the
 * document's `sandbox` node (or the whole document, wrapped) is parsed over
 * a profile with defaults.
 *
 * Owns: nothing.  Must not: write files.  Every input ends in a profile
 * whose lists are allocated, whose network agrees with its hosts (lowercase,
 * never empty under hosts), whose accepted backends are known bits -- or in
 * one printable "file:line:col: sandbox...: sentence"; never a crash, leak
 * or hang.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz.h"
#include "util/util.h"

static void check_list(const tgi_strv *l)
{
	check(l->v != NULL);
	for (size_t i = 0; i < l->n; i++)
		check(l->v[i] && *l->v[i]);
	check(l->v[l->n] == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[1024];
	tgi_srcmap *map = NULL;
	if (size > (1u << 16))
		return 0;
	err[0] = '\0';
	json_t *doc = tgi_yaml_parse((const char *)data, size, &map, err, sizeof err);
	if (!doc)
		return 0;
	json_t *root = json_is_object(doc) && json_object_get(doc, "sandbox")
	               ? json_incref(doc) : json_pack("{s:O}", "sandbox", doc);
	json_decref(doc);
	tgi_config *c = NULL;
	/* a config around it for the messages (its own sandbox may fail: then
	 * parse the node over the defaults directly) */
	if (tgi_config_from_json(json_pack("{}"), NULL, "fuzz.yaml", "/nonexistent", &c, err,
	                         sizeof err) < 0) {
		json_decref(root);
		tgi_srcmap_free(map);
		return 0;
	}
	json_decref(c->root);
	c->root = json_incref(root);
	tgi_sb_profile p;
	tgi_sb_profile_init(&p, TGI_SANDBOX_WORKSPACE_WRITE);
	err[0] = '\0';
	int r = tgi_sb_profile_parse(c, json_object_get(root, "sandbox"), "/sandbox", &p, err,
	                             sizeof err);
	if (r < 0) {
		check(err[0] && printable(err) && strstr(err, "sandbox"));
	} else {
		check((unsigned)p.mode <= TGI_SANDBOX_FULL);
		check_list(&p.read);
		check_list(&p.write);
		check_list(&p.sockets);
		check_list(&p.hosts);
		check(p.net == TGI_NET_HOSTS ? p.hosts.n > 0 : p.hosts.n == 0);
		for (size_t i = 0; i < p.hosts.n; i++)
			for (const char *h = p.hosts.v[i]; *h; h++)
				check(!(*h >= 'A' && *h <= 'Z'));
		check((p.accept & ~(unsigned)TGI_SB_ACCEPT_LANDLOCK) == 0);
	}
	tgi_sb_profile_free(&p);
	tgi_config_free(c);
	json_decref(root);
	tgi_srcmap_free(map);
	return 0;
}
