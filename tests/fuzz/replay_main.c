/* replay_main.c — run LLVMFuzzerTestOneInput over every file of a directory
 * (argv[1]) without libFuzzer, so ctest replays the corpus in every build.
 * Each input runs in a forked child, so a failing input (abort, sanitizer
 * report) is named and the others still run. Prints "N passed, M failed";
 * exits non-zero if anything failed or the directory has no inputs. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Read a whole file; NULL on error. */
static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *d = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *nd = realloc(d, cap);
            if (!nd) { free(d); fclose(f); return NULL; }
            d = nd;
        }
        size_t r = fread(d + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) { free(d); return NULL; }
    *len = n;
    return d;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    DIR *dir = opendir(argv[1]);
    if (!dir) {
        perror(argv[1]);
        return 2;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
            if (!names) return 2;
        }
        names[n++] = strdup(de->d_name);
    }
    closedir(dir);
    qsort(names, n, sizeof *names, cmp_names);

    int passed = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", argv[1], names[i]);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        size_t len = 0;
        uint8_t *data = slurp(path, &len);
        if (!data) {
            fprintf(stderr, "%s: cannot read\n", path);
            failed++;
            continue;
        }
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid == 0) {
            LLVMFuzzerTestOneInput(data, len);
            exit(0);   /* not _exit: LeakSanitizer checks at exit */
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "FAILED: %s\n", path);
            failed++;
        } else {
            passed++;
        }
        free(data);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    printf("%d passed, %d failed\n", passed, failed);
    return (failed || passed == 0) ? 1 : 0;
}
