/*
 * tools/lwlock_status.c - lwlock --status's answer (lwlock_status.h).
 *
 * Text, for a person at a terminal:
 *
 *   nightly: held as a lock, 29812 ms left
 *     web1-4242-1a2b3c4d:4242  1 hold
 *     waiting, in turn:
 *       1. web2-77-9f3e1c0a:77  in line 329812 ms more unless renewed, place 4800 ms
 *       2. java-svc-8a7f...:41  in line 629812 ms more
 *
 * and JSON, for a script: {"name": ..., "state": "free"|"held", "kind":
 * "lock"|"read"|"write"|"permits"|"other", "type", "ttl_ms", "permits"
 * (permits only), "holders": [{"id", "count", "ttl_ms"}], "holders_total",
 * "waiters": [{"id", "give_up_ms", "place_ms" (null: a Redisson waiter)}],
 * "waiters_total"}: a fair lock's queue, in order (a free lock with
 * waiters is not free: it is the head's turn).
 * A name that is not a lock at all (a list, an application's hash) counts
 * as held: it is not free to take.  A semaphore (a string holding a
 * number: its count) is held while any of its permits is taken, and
 * said as lwlock's refusals say it (lwlock_holds_phrase()):
 *
 *   backups: a semaphore, 2 permits available, 2 taken, no expiry
 *
 * Ids are printed as stored (a permit's raw id as hex), a byte that is
 * not printable as \xNN (a backslash as \\) so that no name or id
 * written to Redis can move a terminal's cursor or change its colours.
 * A waiter's "in line" time is its timeout score in the queue, Redis's
 * (Redisson's rule, and leasewheel's keep(): its place lease plus the wait
 * of each waiter up to it), not the wait its client asked for, which is
 * the client's own and not stored.  A free name's JSON "type" is Redis's
 * TYPE, "none".
 */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>
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

/* The length of the well-formed UTF-8 character at s, 0 when none
 * (below). */
static size_t utf8_char(const unsigned char *s);

/* s for a terminal: printable ASCII and UTF-8 as they are, a backslash
 * doubled, any other byte (a control character, ESC, a byte of no UTF-8
 * character) as \xNN. */
static void text_string(const char *s, FILE *out)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = *p >= 0x80 ? utf8_char(p) : 0;

        if (n) {
            fwrite(p, 1, n, out);
            p += n;
            continue;
        }
        if (*p == '\\')
            fputs("\\\\", out);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(out, "\\x%02x", *p);
        else
            fputc(*p, out);
        p++;
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

/* A fair lock's queue, in turn. */
static void print_waiters(const struct lw_name_status *st, FILE *out)
{
    unsigned shown = st->nwaiters < LW_STATUS_WAITERS ? st->nwaiters : LW_STATUS_WAITERS;

    if (!st->nwaiters)
        return;
    fputs("  waiting, in turn:\n", out);
    for (unsigned i = 0; i < shown; i++) {
        const struct lw_name_waiter *w = &st->waiters[i];

        fprintf(out, "    %u. ", i + 1);
        text_string(w->id, out);
        fprintf(out, "  in line %" PRId64 " ms more", w->give_up_ms);
        if (w->place_ms != INT64_MIN) /* leasewheel's: renewed while it waits */
            fprintf(out, " unless renewed, place %" PRId64 " ms", w->place_ms);
        fputc('\n', out);
    }
    if (shown < st->nwaiters)
        fprintf(out, "    (and %u more)\n", st->nwaiters - shown);
}

static void print_text(const char *key, const struct lw_name_status *st, FILE *out)
{
    static const char *const held_as[] = {
        [LW_NAME_LOCK] = "a lock",
        [LW_NAME_READ] = "a read lock (read-write lock)",
        [LW_NAME_WRITE] = "a write lock (read-write lock)",
    };
    unsigned shown = st->nholders < LW_STATUS_HOLDERS ? st->nholders : LW_STATUS_HOLDERS;

    text_string(key, out);
    if (st->kind == LW_NAME_FREE) {
        fprintf(out, ": free%s\n", st->nwaiters ? ", the first waiter's turn" : "");
        print_waiters(st, out);
        return;
    }
    if (st->kind == LW_NAME_OTHER) {
        char what[100];

        lwlock_holds_phrase(st, what, sizeof what);
        fprintf(out, " holds %s%s\n", what,
                lwlock_phrase_says_no_lock(what) ? "" : ", not a lock");
        return;
    }
    if (st->kind == LW_NAME_PERMITS)
        fprintf(out, ": a semaphore, %" PRId64 " permits available, %u taken", st->permits,
                st->nholders);
    else
        fprintf(out, ": held as %s", held_as[st->kind]);
    print_ttl(st->ttl_ms, out);
    fputc('\n', out);
    if (st->term) { /* an elected leader's term and value */
        fprintf(out, "  term %" PRIu64 ", value \"", st->term);
        text_string(st->value, out);
        fputs("\"\n", out);
    }
    if (st->kind == LW_NAME_PERMITS && shown) /* a lock's holder names its host; a permit not */
        fputs("  permit ids, random: COMMAND gets its own in LWLOCK_PERMIT\n", out);
    for (unsigned i = 0; i < shown; i++) {
        const struct lw_name_holder *h = &st->holders[i];

        fputs("  ", out);
        text_string(h->id, out);
        if (st->kind == LW_NAME_PERMITS) {
            fputs("  ", out);
            print_permit_ttl(h->ttl_ms, out);
        } else {
            fprintf(out, "  %" PRId64 " hold%s\n", h->count, h->count == 1 ? "" : "s");
        }
    }
    if (shown < st->nholders)
        fprintf(out, "  (and %u more)\n", st->nholders - shown);
    print_waiters(st, out);
}

/* The length of the well-formed UTF-8 character at s (RFC 3629: no
 * overlong form, no surrogate, nothing past U+10FFFF), 0 when there is
 * none. */
static size_t utf8_char(const unsigned char *s)
{
    unsigned cp, n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3
                                    : s[0] >= 0xc0   ? 2
                                                     : 0;
    static const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};

    if (n == 0 || s[0] > 0xf4)
        return 0;
    cp = s[0] & (0x7f >> n);
    for (unsigned i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* s as a JSON string: UTF-8 as it is; a control character, and a byte
 * that is no part of a UTF-8 character (a binary name's), as \u00XX
 * (JSON must be UTF-8: such a byte cannot be said exactly). */
static void json_string(const char *s, FILE *out)
{
    const unsigned char *p = (const unsigned char *)s;

    fputc('"', out);
    while (*p) {
        size_t n = *p >= 0x80 ? utf8_char(p) : 0;

        if (n) {
            fwrite(p, 1, n, out);
            p += n;
            continue;
        }
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
        p++;
    }
    fputc('"', out);
}

/* Free: no key, or a semaphore none of whose permits is taken; and no
 * fair lock's waiter in line. */
static int is_free(const struct lw_name_status *st)
{
    return (st->kind == LW_NAME_FREE || (st->kind == LW_NAME_PERMITS && st->nholders == 0)) &&
           st->nwaiters == 0;
}

static void print_json(const char *key, const struct lw_name_status *st, FILE *out)
{
    unsigned shown = st->nholders < LW_STATUS_HOLDERS ? st->nholders : LW_STATUS_HOLDERS;

    fputs("{\"name\": ", out);
    json_string(key, out);
    fprintf(out, ", \"state\": \"%s\", \"kind\": \"%s\", \"type\": ",
            is_free(st) ? "free" : "held", kind_name(st->kind));
    json_string(st->type[0] ? st->type : "none", out); /* Redis's TYPE of no key */
    fprintf(out, ", \"ttl_ms\": %" PRId64, st->ttl_ms);
    if (st->kind == LW_NAME_PERMITS)
        fprintf(out, ", \"permits\": %" PRId64, st->permits);
    if (st->term) { /* an elected leader's */
        fprintf(out, ", \"term\": %" PRIu64 ", \"value\": ", st->term);
        json_string(st->value, out);
    }
    fputs(", \"holders\": [", out);
    for (unsigned i = 0; i < shown; i++) {
        fputs(i ? ", {\"id\": " : "{\"id\": ", out);
        json_string(st->holders[i].id, out);
        fprintf(out, ", \"count\": %" PRId64 ", \"ttl_ms\": %" PRId64 "}", st->holders[i].count,
                st->holders[i].ttl_ms);
    }
    fprintf(out, "], \"holders_total\": %u, \"waiters\": [", st->nholders);
    for (unsigned i = 0; i < st->nwaiters && i < LW_STATUS_WAITERS; i++) {
        const struct lw_name_waiter *w = &st->waiters[i];

        fputs(i ? ", {\"id\": " : "{\"id\": ", out);
        json_string(w->id, out);
        fprintf(out, ", \"give_up_ms\": %" PRId64 ", \"place_ms\": ", w->give_up_ms);
        if (w->place_ms == INT64_MIN)
            fputs("null}", out);
        else
            fprintf(out, "%" PRId64 "}", w->place_ms);
    }
    fprintf(out, "], \"waiters_total\": %u}\n", st->nwaiters);
}

const char *lwlock_type_phrase(const char *type)
{
    static const char *const phrases[][2] = {
        {"string", "a string"},
        {"list", "a list"},
        {"set", "a set"},
        {"zset", "a sorted set"},
        {"hash", "a hash"},
        {"stream", "a stream"},
    };

    for (size_t i = 0; i < sizeof phrases / sizeof phrases[0]; i++)
        if (strcmp(type, phrases[i][0]) == 0)
            return phrases[i][1];
    return "another type of Redis value";
}

const char *lwlock_holds_phrase(const struct lw_name_status *st, char *buf, size_t size)
{
    switch (st->kind) {
    case LW_NAME_FREE: snprintf(buf, size, "nothing"); break;
    case LW_NAME_LOCK: snprintf(buf, size, "a lock"); break;
    case LW_NAME_READ:
    case LW_NAME_WRITE: snprintf(buf, size, "a read-write lock"); break;
    case LW_NAME_PERMITS:
        snprintf(buf, size, "a semaphore (%" PRId64 " permits available, %u taken)", st->permits,
                 st->nholders);
        break;
    default:
        snprintf(buf, size, "%s",
                 strcmp(st->type, "hash") == 0 ? "a hash that is not a lock"
                                               : lwlock_type_phrase(st->type));
    }
    return buf;
}

int lwlock_phrase_says_no_lock(const char *phrase)
{
    return strstr(phrase, "not a lock") != NULL;
}

int lwlock_print_status(const char *key, const struct lw_name_status *st, int json, FILE *out)
{
    if (json)
        print_json(key, st, out);
    else
        print_text(key, st, out);
    if (st->kind == LW_NAME_OTHER)
        return EXIT_WRONGKIND;
    return is_free(st) ? 0 : EXIT_HELD;
}

/* When, in epoch ms, the library's clock (lw_clock_now()) reads at_ns. */
static long long epoch_ms_at(uint64_t at_ns)
{
    struct timespec ts;
    long long now_ms;

    clock_gettime(CLOCK_REALTIME, &ts);
    now_ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    return now_ms + ((long long)at_ns - (long long)lw_clock_now()) / 1000000;
}

void lwlock_print_leader(const char *key, int state, const struct lw_leader *l, int json,
                         FILE *out)
{
    if (json) {
        if (state == LW_OBSERVED_LEADER) {
            fprintf(out, "{\"term\": %llu, \"leader\": ", (unsigned long long)l->term);
            json_string(l->leader, out);
            fputs(", \"value\": ", out);
            json_string(l->value, out);
            fprintf(out, ", \"sure_until_ms\": %lld}\n", epoch_ms_at(l->sure_until_ns));
        } else {
            fprintf(out, "{\"state\": \"%s\"}\n",
                    state == LW_OBSERVED_VACANT ? "none" : "unknown");
        }
        return;
    }
    text_string(key, out);
    if (state == LW_OBSERVED_LEADER) {
        fprintf(out, ": term %llu, led by ", (unsigned long long)l->term);
        text_string(l->leader, out);
        fputs(", value \"", out);
        text_string(l->value, out);
        fputs("\"\n", out);
    } else {
        fputs(state == LW_OBSERVED_VACANT ? ": no leader\n"
                                          : ": unknown (Redis cannot be read)\n",
              out);
    }
}
