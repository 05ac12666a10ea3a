/*
 * replay_main.c: a libFuzzer target's LLVMFuzzerTestOneInput run once on each
 * input named (a file, or every regular file of a directory) without
 * libFuzzer: the seed corpus replayed under the sanitizers by a compiler that
 * has no libFuzzer (gcc; crt/fuzz/build.sh with REPLAY=1, corpus_replay_test).
 * A finding aborts, as in the fuzzer.
 */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

/* 1 after running the file's bytes, -1 when it cannot be read. */
static int ReplayFile(const char* path) {
  FILE* f = fopen(path, "rb");
  uint8_t* data;
  long size = -1;
  if (f != NULL && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
  if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fprintf(stderr, "replay: cannot read %s\n", path);
    if (f != NULL) fclose(f);
    return -1;
  }
  data = (uint8_t*)malloc(size > 0 ? (size_t)size : 1u);
  if (data == NULL || fread(data, 1, (size_t)size, f) != (size_t)size) {
    fprintf(stderr, "replay: cannot read %s\n", path);
    free(data);
    fclose(f);
    return -1;
  }
  fclose(f);
  (void)LLVMFuzzerTestOneInput(data, (size_t)size);
  free(data);
  return 1;
}

int main(int argc, char** argv) {
  int i, n = 0;
  for (i = 1; i < argc; i++) {
    struct stat st;
    DIR* dir;
    struct dirent* e;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: no %s\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (ReplayFile(argv[i]) < 0) return 1;
      n++;
      continue;
    }
    dir = opendir(argv[i]);
    if (dir == NULL) return 1;
    while ((e = readdir(dir)) != NULL) {
      char path[4096];
      snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
      if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (ReplayFile(path) < 0) {
        closedir(dir);
        return 1;
      }
      n++;
    }
    closedir(dir);
  }
  printf("replayed %d inputs\n", n);
  return n > 0 ? 0 : 1;
}
