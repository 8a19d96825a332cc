/* Subcommands of the execbox binary. Each returns the process exit status. */
#pragma once

#define XB_EXIT_OWN_ERROR 125   /* execbox itself failed, as in env(1) and timeout(1) */

int xb_cmd_run(int argc, char **argv);
int xb_cmd_serve(int argc, char **argv);
int xb_cmd_mcp(int argc, char **argv);
int xb_cmd_version(void);
/* Client commands for a running server (cmd_client.c, cmd_cp.c, cmd_shell.c). */
int xb_cmd_ls(int argc, char **argv);
int xb_cmd_create(int argc, char **argv);
int xb_cmd_rm(int argc, char **argv);
int xb_cmd_exec(int argc, char **argv);
int xb_cmd_cp(int argc, char **argv);
int xb_cmd_shell(int argc, char **argv);
int xb_cmd_logs(int argc, char **argv);
int xb_cmd_approvals(int argc, char **argv);
/* `execbox mcp --server URL`: stdio to a running server's /mcp (mcp_bridge.c). */
int xb_mcp_bridge(const char *url, const char *token);
