// The only C++ in leasewheel: registers the C benchmark cases with Google
// Benchmark and forwards the few State calls they need.
#include <benchmark/benchmark.h>

#include "shim.h"

struct lwb_state {
    benchmark::State &state;
};

extern "C" {

int lwb_keep_running(struct lwb_state *st)
{
    return st->state.KeepRunning();
}

int64_t lwb_arg(struct lwb_state *st, int i)
{
    return st->state.range(i);
}

void lwb_set_iteration_time(struct lwb_state *st, double seconds)
{
    st->state.SetIterationTime(seconds);
}

void lwb_set_items(struct lwb_state *st, int64_t items)
{
    st->state.SetItemsProcessed(items);
}

void lwb_counter(struct lwb_state *st, const char *name, double value)
{
    st->state.counters[name] = value;
}

void lwb_error(struct lwb_state *st, const char *why)
{
    st->state.SkipWithError(why);
}

void lwb_register(const char *name, lwb_fn *fn, const int64_t *args, size_t nargs,
                  int time_mode, double min_time_s)
{
    auto *b = benchmark::RegisterBenchmark(name, [fn](benchmark::State &state) {
        struct lwb_state st = {state};
        fn(&st);
    });
    for (size_t i = 0; i < nargs; i++)
        b->Arg(args[i]);
    if (time_mode == LWB_MANUAL_TIME)
        b->UseManualTime();
    if (min_time_s > 0)
        b->MinTime(min_time_s);
    b->Unit(benchmark::kMicrosecond);
}

int lwb_run(int argc, char **argv)
{
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 2;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

} // extern "C"
