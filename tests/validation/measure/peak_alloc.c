/* Counts the bytes PyTorch's CPU allocator holds, and their peak.
 *
 * PyTorch allocates CPU tensor storage with posix_memalign and releases it
 * with free (c10/core/impl/alloc_cpu.cpp). Preloaded into the measuring
 * Python process, this file keeps the requested size of every
 * posix_memalign block until it is freed; measure_loss.py reads the live
 * and peak totals through ctypes (peak_reset, peak_get, live_get).
 * Written for this project; build: cc -O2 -shared -fPIC -o libpeak.so peak_alloc.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#define SLOTS (1u << 20) /* open addressing; far more than the live blocks */

static void *keys[SLOTS];
static size_t sizes[SLOTS];
static size_t live, peak;
static int (*real_memalign)(void **, size_t, size_t);
static void (*real_free)(void *);

static size_t slot_of(void *p) { return (size_t)(((uintptr_t)p >> 6) * 11400714819323198485ull >> 44); }
static size_t next(size_t i) { return (i + 1) & (SLOTS - 1); }

static void insert(void *p, size_t n) {
  size_t i = slot_of(p);
  while (keys[i]) i = next(i);
  keys[i] = p;
  sizes[i] = n;
}

int posix_memalign(void **p, size_t alignment, size_t n) {
  if (!real_memalign) real_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
  int r = real_memalign(p, alignment, n);
  if (r == 0 && *p) {
    insert(*p, n);
    live += n;
    if (live > peak) peak = live;
  }
  return r;
}

void free(void *p) {
  if (!real_free) real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
  if (p) {
    size_t i = slot_of(p);
    while (keys[i] && keys[i] != p) i = next(i);
    if (keys[i] == p) {
      live -= sizes[i];
      keys[i] = 0;
      /* re-insert the rest of the probe run so that lookups stay correct */
      for (size_t j = next(i); keys[j]; j = next(j)) {
        void *k = keys[j];
        keys[j] = 0;
        insert(k, sizes[j]);
      }
    }
  }
  real_free(p);
}

size_t peak_reset(void) { peak = live; return live; }
size_t peak_get(void) { return peak; }
size_t live_get(void) { return live; }
