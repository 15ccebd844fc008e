/*
 * A C face for Google Benchmark.  Benchmark cases are plain C functions;
 * shim.cc registers them and hands each a struct lwb_state.
 *
 *   static void bm_thing(struct lwb_state *st)
 *   {
 *       while (lwb_keep_running(st)) { ... lwb_set_iteration_time(st, s); }
 *   }
 *   lwb_register("thing", bm_thing, args, nargs, LWB_MANUAL_TIME);
 */
#ifndef LW_BENCH_SHIM_H
#define LW_BENCH_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct lwb_state;
typedef void lwb_fn(struct lwb_state *st);

enum { LWB_AUTO_TIME = 0, LWB_MANUAL_TIME = 1 };

/* true while the benchmark wants another iteration */
int lwb_keep_running(struct lwb_state *st);
/* the case's argument i (e.g. the number of pending timers) */
int64_t lwb_arg(struct lwb_state *st, int i);
/* with LWB_MANUAL_TIME: how long this iteration's measured part took */
void lwb_set_iteration_time(struct lwb_state *st, double seconds);
/* operations done in total, for items_per_second */
void lwb_set_items(struct lwb_state *st, int64_t items);
/* a named number in the report (console and JSON) */
void lwb_counter(struct lwb_state *st, const char *name, double value);
/* mark the case as failed with a reason */
void lwb_error(struct lwb_state *st, const char *why);

/* register `fn` once per argument in args[0..nargs) */
void lwb_register(const char *name, lwb_fn *fn, const int64_t *args, size_t nargs,
                  int time_mode, double min_time_s);
/* parse Google Benchmark's flags, run what is registered; exit status */
int lwb_run(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
