/*
 * tools/lwlock_status.c - lwlock --status's answer (lwlock_status.h).
 *
 * Text, for a person at a terminal:
 *
 *   nightly: held as a lock, 29812 ms left
 *     web1-4242-1a2b3c4d:4242  1 hold
 *
 * and JSON, for a script: {"name": ..., "state": "free"|"held", "kind":
 * "lock"|"read"|"write"|"permits"|"other", "type", "ttl_ms", "permits"
 * (permits only), "holders": [{"id", "count", "ttl_ms"}], "holders_total"}.
 * A name that is not a lock at all (a list, say) counts as held: it is not
 * free to take.  A semaphore is held while any of its permits is taken.  Ids are printed as stored (a permit's raw id as hex).
 */
#include <inttypes.h>
#include <string.h>

#include "lwlock_args.h"
#include "lwlock_status.h"

static const char *kind_name(int kind)
{
    switch (kind) {
    case LW_NAME_FREE: return "free";
    case LW_NAME_LOCK: return "lock";
    case LW_NAME_READ: return "read";
    case LW_NAME_WRITE: return "write";
    case LW_NAME_PERMITS: return "permits";
    default: return "other";
    }
}

/* ", N ms left", ", no expiry" */
static void print_ttl(int64_t ttl_ms, FILE *out)
{
    if (ttl_ms >= 0)
        fprintf(out, ", %" PRId64 " ms left", ttl_ms);
    else
        fputs(", no expiry", out);
}

/* A permit's time left: -1 is the status script's "never" (Redisson's
 * score 922337203685477); other negative values are past its expiry by
 * Redis's clock: it still counts as taken until an acquire or a renewal
 * reclaims it.  (One expired exactly 1 ms ago reads as never.) */
static void print_permit_ttl(int64_t ttl_ms, FILE *out)
{
    if (ttl_ms == -1)
        fputs("never expires\n", out);
    else if (ttl_ms < 0)
        fprintf(out, "expired %" PRId64 " ms ago (given back at the next acquire)\n", -ttl_ms);
    else
        fprintf(out, "%" PRId64 " ms left\n", ttl_ms);
}

static void print_text(const char *key, const struct lw_name_status *st, FILE *out)
{
    static const char *const held_as[] = {
        [LW_NAME_LOCK] = "a lock",
        [LW_NAME_READ] = "a read lock (read-write lock)",
        [LW_NAME_WRITE] = "a write lock (read-write lock)",
    };
    unsigned shown = st->nholders < LW_STATUS_HOLDERS ? st->nholders : LW_STATUS_HOLDERS;

    if (st->kind == LW_NAME_FREE) {
        fprintf(out, "%s: free\n", key);
        return;
    }
    if (st->kind == LW_NAME_OTHER) {
        fprintf(out, "%s: not a lock (a %s)\n", key, st->type);
        return;
    }
    if (st->kind == LW_NAME_PERMITS)
        fprintf(out, "%s: permits, %" PRId64 " available, %u taken", key, st->permits,
                st->nholders);
    else
        fprintf(out, "%s: held as %s", key, held_as[st->kind]);
    print_ttl(st->ttl_ms, out);
    fputc('\n', out);
    for (unsigned i = 0; i < shown; i++) {
        const struct lw_name_holder *h = &st->holders[i];

        if (st->kind == LW_NAME_PERMITS) {
            fprintf(out, "  %s  ", h->id);
            print_permit_ttl(h->ttl_ms, out);
        } else {
            fprintf(out, "  %s  %" PRId64 " hold%s\n", h->id, h->count, h->count == 1 ? "" : "s");
        }
    }
    if (shown < st->nholders)
        fprintf(out, "  (and %u more)\n", st->nholders - shown);
}

/* s as a JSON string. */
static void json_string(const char *s, FILE *out)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20 || ch > 0x7e)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

/* Free: no key, or a semaphore none of whose permits is taken. */
static int is_free(const struct lw_name_status *st)
{
    return st->kind == LW_NAME_FREE || (st->kind == LW_NAME_PERMITS && st->nholders == 0);
}

static void print_json(const char *key, const struct lw_name_status *st, FILE *out)
{
    unsigned shown = st->nholders < LW_STATUS_HOLDERS ? st->nholders : LW_STATUS_HOLDERS;

    fputs("{\"name\": ", out);
    json_string(key, out);
    fprintf(out, ", \"state\": \"%s\", \"kind\": \"%s\", \"type\": ",
            is_free(st) ? "free" : "held", kind_name(st->kind));
    json_string(st->type, out);
    fprintf(out, ", \"ttl_ms\": %" PRId64, st->ttl_ms);
    if (st->kind == LW_NAME_PERMITS)
        fprintf(out, ", \"permits\": %" PRId64, st->permits);
    fputs(", \"holders\": [", out);
    for (unsigned i = 0; i < shown; i++) {
        fputs(i ? ", {\"id\": " : "{\"id\": ", out);
        json_string(st->holders[i].id, out);
        fprintf(out, ", \"count\": %" PRId64 ", \"ttl_ms\": %" PRId64 "}", st->holders[i].count,
                st->holders[i].ttl_ms);
    }
    fprintf(out, "], \"holders_total\": %u}\n", st->nholders);
}

int lwlock_print_status(const char *key, const struct lw_name_status *st, int json, FILE *out)
{
    if (json)
        print_json(key, st, out);
    else
        print_text(key, st, out);
    return is_free(st) ? 0 : EXIT_HELD;
}
