/*
 * status.c — names, exit codes and texts of statuses and error kinds,
 * generated from the X-macros in toolgate.h (append-only).
 */
#include "toolgate.h"

static const char *const status_names[] = {
#define X(e, name, code) name,
	TG_STATUS_MAP(X)
#undef X
};

static const int status_codes[] = {
#define X(e, name, code) code,
	TG_STATUS_MAP(X)
#undef X
};

static const char *const errkind_names[] = {
#define X(e, name, text) name,
	TG_ERRKIND_MAP(X)
#undef X
};

static const char *const errkind_texts[] = {
#define X(e, name, text) text,
	TG_ERRKIND_MAP(X)
#undef X
};

const char *tg_status_name(tg_status s)
{
	return (unsigned)s < TG_STATUS__COUNT ? status_names[s] : "?";
}

int tg_status_exit_code(tg_status s)
{
	return (unsigned)s < TG_STATUS__COUNT ? status_codes[s] : 1;
}

const char *tg_errkind_name(tg_errkind k)
{
	return (unsigned)k < TG_ERR__COUNT ? errkind_names[k] : "?";
}

const char *tg_errkind_text(tg_errkind k)
{
	return (unsigned)k < TG_ERR__COUNT ? errkind_texts[k] : "?";
}

const char *tg_version(void)
{
	return TG_VERSION_STRING;
}
