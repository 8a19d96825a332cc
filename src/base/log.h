/* Logging to stderr, for core and the layers above it (and the cli); the
 * layers below core return errors instead (err.h). */
#pragma once

enum xb_log_level { XB_LOG_ERROR, XB_LOG_WARN, XB_LOG_INFO, XB_LOG_DEBUG };

void xb_log_set_level(enum xb_log_level level);
void xb_log(enum xb_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define xb_error(...) xb_log(XB_LOG_ERROR, __VA_ARGS__)
#define xb_warn(...) xb_log(XB_LOG_WARN, __VA_ARGS__)
#define xb_info(...) xb_log(XB_LOG_INFO, __VA_ARGS__)
#define xb_debug(...) xb_log(XB_LOG_DEBUG, __VA_ARGS__)
