/* The judges' language table: what each language compiles and runs with,
 * its Piston name and Judge0 CE id. Presence and version come from the
 * host's /usr (the sandboxes see the host's /usr read-only), detected once
 * on first use by running the program's --version. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "judge/judge.h"

static struct xb_judge_lang langs[] = {
        { "c", { "gcc", "c11" }, "gcc", 50, "C (GCC %s)", "gcc", ".c", "main.c", "gcc -O2 -o a.out", " -lm",
          { "./a.out" } },
        { "c++", { "cpp", "g++", "cc" }, "gcc", 54, "C++ (GCC %s)", "g++", ".cpp", "main.cpp", "g++ -O2 -o a.out",
          "", { "./a.out" } },
        { "python", { "py", "python3", "py3" }, NULL, 71, "Python (%s)", "python3", ".py", "main.py", NULL, NULL,
          { "python3", "%m" } },
        { "javascript", { "js", "node-javascript", "node-js" }, "node", 63, "JavaScript (Node.js %s)", "node",
          ".js", "main.js", NULL, NULL, { "node", "%m" } },
        { "bash", { "sh" }, NULL, 46, "Bash (%s)", "bash", ".sh", "main.sh", NULL, NULL, { "bash", "%m" } },
        { "go", { "golang" }, NULL, 60, "Go (%s)", "go", ".go", "main.go", "GOCACHE=/tmp/gocache go build -o a.out",
          "", { "./a.out" } },
        { "rust", { "rs" }, NULL, 73, "Rust (%s)", "rustc", ".rs", "main.rs", "rustc -O -o a.out", "", { "./a.out" } },
        { "java", { "jdk" }, NULL, 62, "Java (OpenJDK %s)", "javac", ".java", "Main.java", "javac", "",
          { "java", "-cp", ".", "%c" } },
};
#define NLANGS (sizeof(langs) / sizeof(langs[0]))

static const char *const bindirs[] = { "/usr/bin", "/usr/local/bin", NULL };

/* "12.2.0" from "gcc (Debian 12.2.0-14) 12.2.0", "20.1.0" from "v20.1.0". */
static bool
found_version(const char *line, char *buf, size_t n)
{
        for (const char *p = line; *p; p++) {
                size_t k;

                if (!isdigit((unsigned char)*p))
                        continue;
                if (p > line && isalnum((unsigned char)p[-1]) && p[-1] != 'v' && p[-1] != 'o')
                        continue;
                k = strspn(p, "0123456789.");
                while (k && p[k - 1] == '.')
                        k--;
                if (memchr(p, '.', k)) {
                        snprintf(buf, n, "%.*s", (int)k, p);
                        return true;
                }
                p += k ? k - 1 : 0;
        }
        return false;
}

/* The first dotted number in the program's --version output. */
static void
detect_version(const char *path, char *buf, size_t n)
{
        char cmd[300], line[256];
        FILE *f;

        snprintf(buf, n, "unknown");
        snprintf(cmd, sizeof(cmd), "timeout 10 %s %s 2>&1", path, strstr(path, "/go") ? "version" : "--version");
        if (!(f = popen(cmd, "re")))
                return;
        while (fgets(line, sizeof(line), f) && !found_version(line, buf, n))
                ;
        /* drain, so the child never blocks on a full pipe */
        while (fgets(line, sizeof(line), f))
                ;
        pclose(f);
}

static void
detect(void)
{
        static bool done;

        if (done)
                return;
        done = true;
        for (size_t i = 0; i < NLANGS; i++)
                for (const char *const *d = bindirs; *d; d++) {
                        char path[128];

                        snprintf(path, sizeof(path), "%s/%s", *d, langs[i].bin);
                        if (access(path, X_OK) == 0) {
                                langs[i].present = true;
                                detect_version(path, langs[i].version, sizeof(langs[i].version));
                                break;
                        }
                }
}

const struct xb_judge_lang *
xb_judge_langs(size_t *ret_n)
{
        detect();
        *ret_n = NLANGS;
        return langs;
}

static bool
version_ok(const struct xb_judge_lang *l, const char *want)
{
        size_t n;

        if (!want || !*want || !strcmp(want, "*") || !strcmp(want, "latest"))
                return true;
        n = strlen(want);
        /* "3", "3.11", "3.11.2" and "3.x" match 3.11.2 */
        if (n > 2 && !strcmp(want + n - 2, ".x"))
                n -= 2;
        return !strncmp(l->version, want, n) && (l->version[n] == '\0' || l->version[n] == '.');
}

const struct xb_judge_lang *
xb_judge_lang_piston(const char *name, const char *version)
{
        detect();
        for (size_t i = 0; i < NLANGS; i++) {
                bool hit = !strcmp(langs[i].piston, name);

                for (size_t a = 0; a < XB_JUDGE_ALIASES && langs[i].aliases[a] && !hit; a++)
                        hit = !strcmp(langs[i].aliases[a], name);
                if (hit && langs[i].present && version_ok(&langs[i], version))
                        return &langs[i];
        }
        return NULL;
}

const struct xb_judge_lang *
xb_judge_lang_judge0(int id)
{
        detect();
        for (size_t i = 0; i < NLANGS; i++)
                if (langs[i].judge0_id == id && langs[i].present)
                        return &langs[i];
        return NULL;
}

const char *
xb_judge0_lang_name(const struct xb_judge_lang *l, char *buf, size_t n)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        snprintf(buf, n, l->judge0_name, l->version);
#pragma GCC diagnostic pop
        return buf;
}
