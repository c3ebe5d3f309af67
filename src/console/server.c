/* SKELETON: replaced by its owner. */
#include "console/console.h"

int tg_console(tg_gate *g, const tg_console_options *o, char **errmsg)
{
	(void)g;
	(void)o;
	return tgi_fail(errmsg, "the console is not built yet");
}

void tg_console_stop(void)
{
}
