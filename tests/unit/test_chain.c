/*
 * test_chain.c — the gate's chain (src/gate/gate.c, mw/part.h,
 * gate/parts.c): built from the stages' order and the parts that are
 * configured, equal to DESIGN §1/§4's diagram with every part on and to
 * the bare pipeline with none; a judgment (tgi_call_judge) runs the
 * judging steps up to decide and no further, and runs no hook; the bridge
 * is a late part with no step, opened on demand for a report.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gate/gate.h"

static char ws[64];

static int setup(void **state)
{
	strcpy(ws, "/tmp/tg-chain.XXXXXX");
	assert_non_null(mkdtemp(ws));
	unsetenv("TOOLGATE_CONFIG");
	unsetenv("TOOLGATE_PRINCIPAL");
	unsetenv("TOOLGATE_TOKEN");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
	return system(cmd);
}

static tg_gate *open_with(const char *yaml)
{
	char p[128];
	snprintf(p, sizeof p, "%s/toolgate.yaml", ws);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(yaml, f);
	fclose(f);
	tg_options o = {.workspace = ws, .config_path = p, .sync_full = 0};
	tg_gate *g = NULL;
	char *err = NULL;
	int rc = tg_gate_open(&o, &g, &err);
	if (rc)
		fprintf(stderr, "open: %s\n", err);
	assert_int_equal(rc, 0);
	return g;
}

/* The chain's names joined by " → ", with "|" where admitting ends. */
static void names(const tg_gate *g, char *out, size_t cap)
{
	out[0] = '\0';
	for (size_t i = 0; i < g->nchain; i++) {
		if (i)
			strncat(out, i == g->nadmit ? " | " : " → ", cap - strlen(out) - 1);
		strncat(out, g->chain[i].name, cap - strlen(out) - 1);
	}
}

/* A step's phase never goes back: a part follows the stage it names. */
static void assert_phases_ordered(const tg_gate *g)
{
	for (size_t i = 1; i < g->nchain; i++)
		assert_true(g->chain[i - 1].phase <= g->chain[i].phase);
}

static const char every_part[] =
	"mode: bypassPermissions\n"
	"loop_detection: {enabled: true}\n"
	"rate_limits: {\"*\": 100/sec}\n"
	"hooks:\n"
	"  before_tool_call: [{command: [/bin/true]}]\n"
	"  after_tool_call: [{command: [/bin/true]}]\n"
	"tools:\n"
	"  add_task:\n"
	"    description: Add a task.\n"
	"    input_schema: {type: object, properties: {title: {type: string}}}\n"
	"    aliases: {name: title}\n"
	"    command: [/bin/cat]\n"
	"    read_only: true\n";

static void test_every_part(void **state)
{
	tg_gate *g = open_with(every_part);
	char got[512];
	names(g, got, sizeof got);
	/* DESIGN §1 with §4's parts in their places */
	assert_string_equal(got, "decode → shell_patch → client_args → aliases → validate → "
	                         "identify → loop → hooks → decide → rate_limit → approve | "
	                         "execute → shape");
	assert_phases_ordered(g);
	for (size_t i = 0; i < g->nchain; i++) {
		const tgi_step *s = &g->chain[i];
		assert_true((s->stage != NULL) != (s->part != NULL));
		/* what a judgment runs keeps nothing and runs nothing */
		int judges = !strcmp(s->name, "loop") || !strcmp(s->name, "hooks") ||
		             !strcmp(s->name, "rate_limit") || s->phase > TGI_PHASE_DECIDE;
		assert_int_equal(s->judge, !judges);
	}
	tg_gate_close(g);
}

static void test_no_part(void **state)
{
	tg_gate *g = open_with("loop_detection: {enabled: false}\n");
	char got[512];
	names(g, got, sizeof got);
	/* the always-on steps only act on the calls they name */
	assert_string_equal(got, "decode → shell_patch → client_args → validate → identify → "
	                         "decide → approve | execute → shape");
	assert_phases_ordered(g);
	tg_gate_close(g);
}

/* A judgment stops after decide: the before-hook (a program that leaves a
 * file when it runs) is not run, and nothing is written to the ledger. */
static void test_judge_runs_no_hook(void **state)
{
	char yaml[1024], marker[128], hook[128];
	snprintf(marker, sizeof marker, "%s/ran", ws);
	snprintf(hook, sizeof hook, "%s/hook.sh", ws);
	FILE *f = fopen(hook, "w");
	fprintf(f, "#!/bin/sh\ntouch '%s'\nexit 0\n", marker);
	fclose(f);
	chmod(hook, 0755);
	snprintf(yaml, sizeof yaml, "mode: default\nhooks:\n  before_tool_call: [{command: [%s]}]\n",
	         hook);
	tg_gate *g = open_with(yaml);
	tg_request req = {.tool = "list_dir", .args = "{\"path\": \".\"}", .dry_run = 1};
	tgi_call c;
	tgi_call_begin(&c, g, &req);
	assert_int_equal(tgi_call_judge(&c), TGI_NEXT);
	assert_int_equal(c.decision, TGI_ALLOW);
	tgi_call_drop(&c);
	assert_int_equal(access(marker, F_OK), -1);
	/* and a call that is made does run it: the hook is a real one */
	tg_request run = {.tool = "list_dir", .args = "{\"path\": \".\"}"};
	tg_result *r = NULL;
	tg_call(g, &run, &r);
	assert_int_equal(tg_result_status(r), TG_PERSISTED);
	tg_result_free(r);
	assert_int_equal(access(marker, F_OK), 0);
	tg_gate_close(g);
}

/* The bridge is a part with no step: not in the chain, opened late (the
 * ledger is open) when the caller asks for bridged tools, and on demand by
 * a report that needs every tool; it is then the registry's source of
 * tools, which explains a tool its server could not offer. */
static void test_bridge_late_and_on_demand(void **state)
{
	static const char yaml[] = "mcp_servers:\n  down: {command: [/bin/false]}\n";
	char why[512] = "", err[512] = "";
	tg_gate *g = open_with(yaml);   /* not asked for bridged tools */
	char got[512];
	names(g, got, sizeof got);
	assert_null(strstr(got, "bridge"));
	assert_false(tgi_registry_explain(g->reg, "down__x", why, sizeof why));
	assert_null(tgi_registry_need(g->reg, "down__x"));
	/* a report that needs every tool opens it, and its server is tried */
	assert_int_equal(tgi_gate_every_tool(g, err, sizeof err), 0);
	assert_true(tgi_registry_explain(g->reg, "down__x", why, sizeof why));
	assert_non_null(strstr(why, "down"));
	assert_null(tgi_registry_need(g->reg, "down__x"));
	tg_gate_close(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_every_part, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_part, setup, teardown),
		cmocka_unit_test_setup_teardown(test_judge_runs_no_hook, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bridge_late_and_on_demand, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
