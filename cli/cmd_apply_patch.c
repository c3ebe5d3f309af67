/*
 * cmd_apply_patch.c — `toolgate apply-patch [PATCH | -]`: apply a V4A patch
 * in the current directory, behaving like Codex's apply_patch program so
 * it can stand in for it: the patch as the single argument or on stdin,
 * the same success text, exit 0 (applied), 1 (not applied: nothing
 * changed), 2 (usage).  All or nothing, confined to the directory; no
 * gate and no policy (the apply_patch tool is the gated way).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define PATCH_MAX (16u << 20)

static const char usage_text[] =
	"Usage: toolgate apply-patch 'PATCH'\n"
	"       echo 'PATCH' | toolgate apply-patch\n"
	"       toolgate apply-patch [--preserve-crlf] ['PATCH' | -]\n\n"
	"Applies a V4A patch (*** Begin Patch ... *** End Patch) to the files under the\n"
	"current directory, all or nothing, as Codex's apply_patch program does.\n\n"
	"  PATCH              the patch as one argument\n"
	"  -                  read the patch from standard input (also without an argument)\n"
	"  --preserve-crlf    accepted for Codex's sake: line endings are always kept\n"
	"  -h, --help         this text\n\n"
	"exit: 0 applied, 1 not applied (nothing changed), 2 usage\n";

int cmd_apply_patch(cli_run *r, int argc, char **argv)
{
	int i = 1;
	if (i < argc && !strcmp(argv[i], "--preserve-crlf"))
		i++;                    /* Codex's flag: line endings are always kept */
	if (i < argc && (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (argc - i > 1) {
		fputs("Error: apply_patch accepts exactly one PATCH argument.\n", stderr);
		return 2;
	}

	char *patch;
	size_t len;
	if (i < argc && strcmp(argv[i], "-")) {
		patch = strdup(argv[i]);
		len = strlen(argv[i]);
	} else {
		if (!(patch = cli_read_input("-", PATCH_MAX, &len)))
			return 1;
		if (len == 0) {
			free(patch);
			fputs(usage_text, stderr);
			return 2;
		}
	}

	char *summary, *message;
	int code = tg_apply_patch(NULL, patch, len, &summary, &message);
	if (code == 0)
		fputs(summary, stdout);
	if (message)            /* the error, or what recovering an earlier patch left */
		fprintf(stderr, "%s\n", message);
	free(summary);
	free(message);
	free(patch);
	return fflush(stdout) == 0 ? code : 1;
}
