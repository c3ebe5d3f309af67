/*
 * fuzz_shell.c — libFuzzer target for the shell splitter (src/policy/shell.c).
 *
 * The input is split twice: as a command string (tgi_shell_split) and, cut
 * at NUL bytes, as an argv (tgi_shell_from_argv).  A split that succeeds
 * must keep the shape shell.h promises: NULL-terminated argv and assigns
 * that their counts describe, every string present, known redirection
 * operators, known flags, a printable reason exactly when a command is
 * opaque, depth at most 4, no more than TGI_SHELL_MAX_CMDS commands, and
 * tgi_shell_program inside argv; what each command reads
 * (tgi_shell_read_paths) is a list of words.  A split that fails must leave the output
 * empty and say why in one printable line.  Any crash, leak, hang or
 * sanitizer report is a bug.
 *
 * Owns: nothing beyond one input.  Must not: run the commands it splits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "policy/shell.h"

#define INPUT_MAX (64 * 1024)
#define ARGV_MAX  64

static const char *const ops[] = { "<", ">", ">>", ">|", "&>", "&>>", "<>", ">&", "<&", "<<",
	                           "<<-", "<<<" };

static int known_op(const char *op)
{
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (strcmp(op, ops[i]) == 0)
			return 1;
	return 0;
}

static void check_line(const tgi_cmdline *cl)
{
	const unsigned known = TGI_CMD_OPAQUE | TGI_CMD_PIPED_IN | TGI_CMD_BACKGROUND;

	check(cl->n <= TGI_SHELL_MAX_CMDS);
	check(!cl->n || cl->v);
	for (size_t i = 0; i < cl->n; i++) {
		const tgi_cmd *c = &cl->v[i];
		size_t prog;
		check(c->argv && !c->argv[c->argc]);
		check(c->assigns && !c->assigns[c->nassigns]);
		check(!c->nredirs || c->redirs);
		check(c->argc || c->nassigns || c->nredirs);
		for (size_t j = 0; j < c->argc; j++)
			check(c->argv[j] != NULL && tgi_shell_basename(c->argv[j]) != NULL);
		for (size_t j = 0; j < c->nassigns; j++)
			check(c->assigns[j] && strchr(c->assigns[j], '='));
		for (size_t j = 0; j < c->nredirs; j++) {
			check(c->redirs[j].target != NULL);
			check(c->redirs[j].fd >= -1);
			check(known_op(c->redirs[j].op));
		}
		check(!(c->flags & ~known));
		check(!(c->flags & TGI_CMD_OPAQUE) == !c->why);
		check(!c->why || (*c->why && printable(c->why)));
		check(c->depth <= 4);
		prog = tgi_shell_program(c);
		check(prog <= c->argc);
		/* what it reads (readonly.c): words present, the class answered */
		for (size_t from = 0; from <= c->argc && from <= prog + 1; from += prog ? prog : 1) {
			tgi_strv reads = {0};
			int rec = -1;
			int r = tgi_shell_read_paths(c, from, &reads, &rec);
			check((r == 0 || r == 1) && (rec == 0 || rec == 1));
			for (size_t k = 0; k < reads.n; k++)
				check(reads.v[k] != NULL);
			tgi_strv_free(&reads);
			r = tgi_shell_reads_only(c, from, NULL, 0);
			check(r == 0 || r == 1);
			if (!prog)
				break;
		}
	}
}

static void check_result(int rc, const tgi_cmdline *cl, const char *err)
{
	if (rc == 0) {
		check_line(cl);
	} else {
		check(rc == -1);
		check(cl->n == 0 && cl->v == NULL);
		check(*err && printable(err));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[INPUT_MAX + 1];
	const char *argv[ARGV_MAX];
	size_t argc = 0;
	tgi_cmdline cl;
	char err[256];
	int rc;

	if (size > INPUT_MAX)
		size = INPUT_MAX;
	memcpy(buf, data, size);
	buf[size] = '\0';

	err[0] = '\0';
	rc = tgi_shell_split(buf, size, &cl, err, sizeof err);
	check_result(rc, &cl, err);
	tgi_cmdline_free(&cl);

	/* the same bytes as NUL-separated words */
	for (size_t at = 0; at <= size && argc < ARGV_MAX;) {
		argv[argc++] = buf + at;
		at += strlen(buf + at) + 1;
	}
	err[0] = '\0';
	rc = tgi_shell_from_argv(argv, argc, &cl, err, sizeof err);
	check_result(rc, &cl, err);
	tgi_cmdline_free(&cl);
	return 0;
}
