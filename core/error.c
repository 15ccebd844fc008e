/* Messages for the LW_E* codes of <leasewheel/error.h>. */
#include <leasewheel/error.h>

struct error_text {
    const char *name;
    const char *message;
};

/* Indexed by -code. */
static const struct error_text error_texts[] = {
    [0] = {"LW_OK", "success"},
    [-LW_EINVAL] = {"LW_EINVAL", "invalid argument"},
    [-LW_ERANGE] = {"LW_ERANGE", "argument out of range"},
    [-LW_ENOMEM] = {"LW_ENOMEM", "out of memory"},
    [-LW_EBUSY] = {"LW_EBUSY", "timer is already scheduled"},
    [-LW_ESHUTDOWN] = {"LW_ESHUTDOWN", "shutting down"},
};

static const struct error_text *find_error(int err)
{
    unsigned idx = err <= 0 ? (unsigned)-err : ~0u;

    if (idx >= sizeof error_texts / sizeof error_texts[0] || !error_texts[idx].name)
        return 0;
    return &error_texts[idx];
}

const char *lw_strerror(int err)
{
    const struct error_text *e = find_error(err);

    return e ? e->message : "unknown error";
}

const char *lw_errname(int err)
{
    const struct error_text *e = find_error(err);

    return e ? e->name : "LW_UNKNOWN";
}
