/* The process title, as /proc/PID/cmdline shows it: the bytes of argv,
 * rewritten in place (setproctitle, as redis and nginx do it). A sandbox's
 * setup child is a copy of execbox, and a one-shot command runs beside it
 * for a moment before it execs init: without a new title, the command
 * could read the daemon's own command line from /proc/1/cmdline. */
#pragma once

/* Take over argv's bytes for the title (main calls this once; until then
 * xb_title_set does nothing). Returns a copy of argv on the heap for the
 * program to use instead, since the original's strings get overwritten;
 * NULL when out of memory. */
char **xb_title_init(int argc, char **argv);
/* Replace the whole title with t, cut to the bytes argv had. */
void xb_title_set(const char *t);
