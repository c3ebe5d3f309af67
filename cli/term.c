/*
 * term.c — output for people: whether stdout is a terminal (the commands
 * print a human form there and JSON, as before, to a pipe), whether to
 * colour (--color, $NO_COLOR, TERM=dumb), a status in its colour, text
 * from tools and models with its control characters made harmless, a
 * plan (tg_plan_text), and a JSON value as readable lines.
 *
 * Owns: those decisions and helpers, for every subcommand.  Must not:
 * change what a pipe gets: the JSON forms are the commands' own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* --color: -1 auto (the default), 0 never, 1 always */
static int color_when = -1;

int cli_color_opt(int opt, const char *arg)
{
	if (opt != OPT_COLOR)
		return 0;
	if (!strcmp(arg, "auto")) {
		color_when = -1;
	} else if (!strcmp(arg, "always")) {
		color_when = 1;
		unsetenv("NO_COLOR");
	} else if (!strcmp(arg, "never")) {
		color_when = 0;
		setenv("NO_COLOR", "1", 1);   /* the approval prompt (the library's) too */
	} else {
		cli_error("--color takes auto, always or never, not \"%s\"", arg);
		return -1;
	}
	return 1;
}

int cli_tty(FILE *f)
{
	return isatty(fileno(f));
}

int cli_color(FILE *f)
{
	if (color_when >= 0)
		return color_when;
	const char *no = getenv("NO_COLOR"), *term = getenv("TERM");
	return cli_tty(f) && !(no && *no) && !(term && !strcmp(term, "dumb"));
}

void cli_paint(FILE *f, const char *sgr, const char *s)
{
	int on = sgr && *sgr && cli_color(f);
	if (on)
		fprintf(f, "\033[%sm", sgr);
	cli_text(f, s ? s : "", s ? strlen(s) : 0);
	if (on)
		fputs("\033[0m", f);
}

/* The colour of a decision or an approval's state, as of the status it
 * leads to. */
static const char *word_sgr(const char *w)
{
	static const char *const map[][2] = {
		{"allow", "persisted"}, {"approved", "persisted"}, {"used", "persisted"},
		{"ask", "pending"},     {"prompt", "pending"},     {"deny", "denied"},
		{"forbidden", "denied"}, {"expired", "denied"},
	};
	const char *sgr = tg_status_sgr(w);
	for (size_t i = 0; !*sgr && i < sizeof map / sizeof map[0]; i++)
		if (!strcmp(w, map[i][0]))
			sgr = tg_status_sgr(map[i][1]);
	return sgr;
}

void cli_status(FILE *f, const char *status, int width)
{
	const char *s = status ? status : "?";
	cli_paint(f, word_sgr(s), s);
	for (int n = (int)strlen(s); n < width; n++)
		fputc(' ', f);
}

void cli_text(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
		    (unsigned char)s[i + 1] <= 0x9f) {
			fputs("  ", f);   /* a C1 control character */
			i++;
		} else {
			fputc((ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f ? ' ' : ch, f);
		}
	}
}

void cli_plan(FILE *f, const json_t *plan)
{
	char *js = json_dumps(plan, JSON_COMPACT);
	char *text = js ? tg_plan_text(js, cli_color(f)) : NULL;
	if (text)
		fputs(text, f);   /* its control characters are already spaces */
	free(text);
	free(js);
}

/* A string: as it is when it is one line, else on lines of its own. */
static void put_string(FILE *f, const char *s, int indent)
{
	if (!strchr(s, '\n')) {
		cli_text(f, s, strlen(s));
		fputc('\n', f);
		return;
	}
	fputc('\n', f);
	const char *p = s;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		fprintf(f, "%*s", indent + 2, "");
		cli_text(f, p, n);
		fputc('\n', f);
		p += n + (nl ? 1 : 0);
	}
}

void cli_value(FILE *f, const json_t *v, int indent)
{
	const char *k;
	json_t *m;
	if (json_is_string(v)) {   /* the text itself, as the tool wrote it */
		const char *s = json_string_value(v);
		size_t n = strlen(s);
		cli_text(f, s, n);
		if (!n || s[n - 1] != '\n')
			fputc('\n', f);
		return;
	}
	if (!json_is_object(v)) {
		char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		fprintf(f, "%*s", indent, "");
		cli_text(f, s ? s : "", s ? strlen(s) : 0);
		fputc('\n', f);
		free(s);
		return;
	}
	json_object_foreach((json_t *)v, k, m) {
		if (json_is_null(m))
			continue;
		fprintf(f, "%*s", indent, "");
		cli_paint(f, "1", k);
		fputs(json_is_string(m) && strchr(json_string_value(m), '\n') ? ":" : ": ", f);
		if (json_is_string(m)) {
			put_string(f, json_string_value(m), indent);
		} else {
			char *s = json_dumps(m, JSON_COMPACT | JSON_ENCODE_ANY);
			cli_text(f, s ? s : "", s ? strlen(s) : 0);
			fputc('\n', f);
			free(s);
		}
	}
}
