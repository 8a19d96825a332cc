/* Logging to stderr, for core and the layers above it (and the cli); the
 * layers below core return errors instead (err.h). When stderr is the
 * journal (JOURNAL_STREAM names it), each line starts with its sd-daemon
 * priority ("<6>"), which journald turns into the record's priority. */
#pragma once

enum xb_log_level { XB_LOG_ERROR, XB_LOG_WARN, XB_LOG_INFO, XB_LOG_DEBUG };

void xb_log_set_level(enum xb_log_level level);
void xb_log(enum xb_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One line "execbox: KIND: message" at priority level, whatever the level
 * set (the access log has its own switch). */
void xb_log_record(enum xb_log_level level, const char *kind, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

#define xb_error(...) xb_log(XB_LOG_ERROR, __VA_ARGS__)
#define xb_warn(...) xb_log(XB_LOG_WARN, __VA_ARGS__)
#define xb_info(...) xb_log(XB_LOG_INFO, __VA_ARGS__)
#define xb_debug(...) xb_log(XB_LOG_DEBUG, __VA_ARGS__)
