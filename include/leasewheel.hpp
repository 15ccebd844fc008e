/*
 * leasewheel.hpp - the locks from C++17: header-only, over the C API of
 * <leasewheel.h> (nothing here is compiled into the library).
 *
 *   leasewheel::client   owns an lw_client (RAII, move-only); built from a
 *                        leasewheel::options or an lw_client_config.
 *   leasewheel::mutex    one lock name on a client, meeting the standard's
 *                        TimedLockable requirements: std::lock_guard,
 *                        std::unique_lock, std::scoped_lock and std::lock
 *                        take it as they take a std::timed_mutex.
 *   leasewheel::semaphore one semaphore of expiring permits on a client
 *                        (<leasewheel/semaphore.h>); its acquires return
 *   leasewheel::permit   a movable RAII permit: released when destroyed,
 *                        from whichever thread holds it then.
 *   leasewheel::category() the std::error_category of the LW_E* codes
 *                        (name "leasewheel", messages from lw_strerror()).
 *
 * Owners.  A mutex's owner is the calling thread (lw_owner_self()), as
 * with the C blocking calls: the thread that locks must unlock, as with
 * std::mutex.  Like every leasewheel lock it is reentrant (the same thread
 * may lock again and must unlock as often, as std::recursive_timed_mutex),
 * and two threads of one client, or two clients, exclude each other.
 * lock() takes a watchdog lock: the client renews its lease until unlock().
 *
 * Errors.  Each call that can fail comes twice: one throws std::system_error
 * (code() in leasewheel::category(), value() the LW_E* code), the other
 * takes a std::error_code& and throws nothing of leasewheel's (std::function
 * and std::string may still throw std::bad_alloc).  try_lock* return false
 * only when another owner held the lock (LW_ELOCKED); anything else
 * (LW_ECONNREFUSED, LW_ETIMEDOUT, ...) is an error.  Error codes compare
 * with the C enumerators (`ec == LW_ELOCKED`) and, where one fits, with
 * std::errc (`ec == std::errc::timed_out`).
 *
 * unlock() is noexcept, as BasicLockable requires.  A failed unlock (not
 * held: LW_ENOTOWNER, e.g. after on_lost; or a transport error, after
 * which a watchdog lock is still held and renewed) goes to the mutex's
 * unlock error handler, and is kept for take_unlock_error().  The default
 * handler writes one line to stderr; set_unlock_error_handler() replaces
 * it (an empty std::function: nothing).  unlock(std::error_code&) reports to
 * its argument instead.
 *
 * Threads.  on_lost, on_risk, on_lease_lost, on_lease_risk and log run
 * on the client's engine thread, or in ev_run() on the caller's loop with
 * lw_client_config::loop (log also on the thread constructing the
 * client): keep them short, make no blocking call of the client there
 * (LW_EDEADLK), and do not destroy the client there.  They must not throw
 * (the trampolines are noexcept: std::terminate).  Every mutex
 * member function may be called from any thread at once, except
 * set_unlock_error_handler() (set it before sharing the mutex) and the
 * destructor; set_max_hold() may be called at any time, and counts for
 * the locks taken after it.
 *
 * Lifetimes.  Destroying a client stops renewing its locks (they expire
 * after their lease, without on_lost) and fails the calls still waiting
 * with LW_ESHUTDOWN; mutexes may outlive it (their calls then fail with
 * LW_ESHUTDOWN).  Destroying a mutex does not unlock it.
 */
#ifndef LEASEWHEEL_HPP
#define LEASEWHEEL_HPP

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "leasewheel.hpp needs C++17 or later (C and older C++: <leasewheel.h>)"
#else

#include <leasewheel.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace leasewheel
{

namespace detail
{

class category_impl final : public std::error_category
{
  public:
    const char *name() const noexcept override
    {
        return "leasewheel";
    }

    std::string message(int ev) const override
    {
        return lw_strerror(ev);
    }

    /* The nearest portable condition, where one fits; else its own. */
    std::error_condition default_error_condition(int ev) const noexcept override
    {
        switch (ev) {
        case LW_EINVAL: return std::make_error_condition(std::errc::invalid_argument);
        case LW_ERANGE: return std::make_error_condition(std::errc::argument_out_of_domain);
        case LW_ENOMEM: return std::make_error_condition(std::errc::not_enough_memory);
        case LW_ETIMEDOUT: return std::make_error_condition(std::errc::timed_out);
        case LW_ECONNREFUSED: return std::make_error_condition(std::errc::connection_refused);
        case LW_ECONNLOST: return std::make_error_condition(std::errc::connection_reset);
        case LW_EDEADLK:
            return std::make_error_condition(std::errc::resource_deadlock_would_occur);
        case LW_ENOTOWNER: return std::make_error_condition(std::errc::operation_not_permitted);
        case LW_ELOCKED: return std::make_error_condition(std::errc::device_or_resource_busy);
        case LW_ENOPERM: return std::make_error_condition(std::errc::permission_denied);
        case LW_EPROTO: return std::make_error_condition(std::errc::protocol_error);
        default: return std::error_condition(ev, *this);
        }
    }
};

} // namespace detail

/* The category of the LW_E* codes: name "leasewheel", lw_strerror()'s
 * messages.  One object per program. */
inline const std::error_category &category() noexcept
{
    static const detail::category_impl c;
    return c;
}

namespace detail
{

inline void assign(std::error_code &ec, int rc) noexcept
{
    if (rc < 0)
        ec.assign(rc, category());
    else
        ec.clear();
}

inline void throw_if(const std::error_code &ec, const char *what)
{
    if (ec)
        throw std::system_error(ec, what);
}

/* A wait in whole milliseconds, rounded up (never shorter than asked);
 * 0 for none or negative; LW_WAIT_FOREVER beyond about 30000 years. */
template <class Rep, class Period>
std::uint64_t wait_ms(const std::chrono::duration<Rep, Period> &d) noexcept
{
    if (!(d > std::chrono::duration<Rep, Period>::zero()))
        return 0;
    const std::chrono::duration<double, std::milli> ms = d;
    if (!(ms.count() < 1e15))
        return LW_WAIT_FOREVER;
    return static_cast<std::uint64_t>(std::ceil(ms.count()));
}

/* A duration option in ms: 0 keeps the library's default; negative or
 * beyond uint32_t is refused. */
inline int set_ms(std::uint32_t &field, std::chrono::milliseconds ms) noexcept
{
    if (ms.count() < 0)
        return LW_EINVAL;
    if (ms.count() > static_cast<std::chrono::milliseconds::rep>(
                         std::numeric_limits<std::uint32_t>::max()))
        return LW_ERANGE;
    if (ms.count() > 0)
        field = static_cast<std::uint32_t>(ms.count());
    return 0;
}

} // namespace detail

/*
 * on_lost: a watchdog lock was lost (lw_lost_fn): its name, the owner that
 * held it (lw_owner_self() of the thread that locked a mutex) and why
 * (enum lw_lost_reason, LW_LOST_HELD_TOO_LONG after max_hold;
 * lw_lost_reason_name() spells it).  Runs on the engine thread; must not
 * throw.
 */
using lost_handler = std::function<void(std::string_view name, std::uint64_t owner, int reason)>;

/*
 * on_risk: a watchdog lock turned at risk (at_risk true: no renewal
 * confirmed, less than half its lease sure to be left) or is safe again
 * (false: a renewal was confirmed), with `left` of its lease sure to be
 * left then (lw_risk_fn).  An at-risk lock either turns safe again or is
 * lost (on_lost); `left` is its holder's time to prepare.  At most once
 * per change of a lock's state.  Runs on the engine thread; must not
 * throw.
 */
using risk_handler = std::function<void(std::string_view name, std::uint64_t owner,
                                        bool at_risk, std::chrono::milliseconds left)>;

/*
 * Which lease a report is about (struct lw_lease), valid during the call
 * only: its kind (LW_LEASE_LOCK, LW_LEASE_READ, LW_LEASE_WRITE,
 * LW_LEASE_PERMIT, LW_LEASE_FAIR, LW_LEASE_PLACE, LW_LEASE_TERM; lw_lease_kind_name()
 * spells it), the lock's or the
 * semaphore's name, the owner (a permit: lw_permit_owner()), and a
 * permit's whole id (else nullptr): compare it with permit::id().  Added
 * in 0.4.
 */
struct lease {
    lw_lease_kind kind;
    std::string_view name;
    std::uint64_t owner;
    const lw_permit *permit;
};

/*
 * on_lease_lost, on_lease_risk: on_lost and on_risk with the lease said
 * whole (its kind: a read or a write hold, a permit).  Called for every
 * lease, with on_lost and on_risk when those are set too: set the ones
 * you want.  Run on the engine thread; must not throw.
 */
using lease_lost_handler = std::function<void(const lease &l, int reason)>;
using lease_risk_handler =
    std::function<void(const lease &l, bool at_risk, std::chrono::milliseconds left)>;

/*
 * log: a line for the program's log (lw_log_fn), without a newline: its
 * level (enum lw_log_level, lw_log_level_name() spells it) and the text,
 * valid during the call only.  Rate-limited by kind (connections lost and
 * made again, failovers, locks at risk, safe, lost).  Runs on the engine
 * thread (or the one constructing the client); must not throw.
 */
using log_handler = std::function<void(int level, std::string_view message)>;

/*
 * A client's settings, the common part of lw_client_config; what is left
 * empty or zero keeps the library's default.  For the rest (Sentinel,
 * acquire_replicas, renewal batches, your own libev loop) build a client
 * from an lw_client_config.
 */
struct options {
    std::string host;      /* "": 127.0.0.1 */
    int port = 0;          /* 0: 6379 */
    std::string unix_path; /* a unix socket instead */
    std::string username;  /* ACL user; "": the default user */
    std::string password;  /* "": no AUTH */
    int db = 0;
    std::string client_id;                         /* "": a random UUID */
    std::vector<std::string> cluster_seeds;        /* "host:port"; any: Redis Cluster */
    std::chrono::milliseconds connect_timeout{0};  /* 0: 2 s */
    std::chrono::milliseconds command_timeout{0};  /* 0: 3 s */
    std::chrono::milliseconds watchdog_timeout{0}; /* the watchdog lease; 0: 30 s */
    std::chrono::milliseconds tick{0};             /* the wheel's tick; 0: 100 ms */
    /* A watchdog lock held this long is given up (on_lost with
     * LW_LOST_HELD_TOO_LONG) and expires at the end of its lease; 0: never.
     * A mutex may set its own (set_max_hold). */
    std::chrono::milliseconds max_hold{0};
    lost_handler on_lost;        /* may be empty */
    risk_handler on_risk;        /* may be empty */
    log_handler log;             /* empty: no log */
    int log_level = LW_LOG_INFO; /* the least severe level logged */
    /* A fleet mixed with Redisson's clients: how far their clocks may run
     * ahead of Redis's (they reclaim permits by their own; leasewheel's
     * scripts by Redis's): a permit is reported lost that much before a
     * lock would be (lw_client_config.permit_clock_skew_ms; the default is
     * the library's, 0). */
    std::chrono::milliseconds permit_clock_skew{LW_DEFAULT_PERMIT_CLOCK_SKEW_MS};
    lease_lost_handler on_lease_lost; /* may be empty */
    lease_risk_handler on_lease_risk; /* may be empty */
};

/* A client: its connections, its engine thread and its watchdog. */
class client
{
  public:
    /* No client: a place to move one into. */
    client() noexcept = default;

    explicit client(const options &opts)
    {
        std::error_code ec;
        open(opts, ec);
        detail::throw_if(ec, "leasewheel::client");
    }
    client(const options &opts, std::error_code &ec)
    {
        open(opts, ec);
    }

    /* cfg as lw_client_new() takes it.  A non-empty on_lost replaces
     * cfg.on_lost and cfg.lost_arg, a non-empty on_risk cfg.on_risk and
     * cfg.risk_arg; empty ones leave them (cfg.log is set in cfg). */
    explicit client(const lw_client_config &cfg, lost_handler on_lost = {},
                    risk_handler on_risk = {})
    {
        std::error_code ec;
        open(cfg, state{std::move(on_lost), std::move(on_risk), {}, {}, {}}, ec);
        detail::throw_if(ec, "leasewheel::client");
    }
    client(const lw_client_config &cfg, lost_handler on_lost, std::error_code &ec)
    {
        open(cfg, state{std::move(on_lost), {}, {}, {}, {}}, ec);
    }
    client(const lw_client_config &cfg, lost_handler on_lost, risk_handler on_risk,
           std::error_code &ec)
    {
        open(cfg, state{std::move(on_lost), std::move(on_risk), {}, {}, {}}, ec);
    }

    client(const client &) = delete;
    client &operator=(const client &) = delete;
    client(client &&o) noexcept
        : c_(std::exchange(o.c_, nullptr)), st_(std::move(o.st_))
    {
    }
    client &operator=(client &&o) noexcept
    {
        if (this != &o) {
            close_or_leak();
            c_ = std::exchange(o.c_, nullptr);
            st_ = std::move(o.st_);
        }
        return *this;
    }
    ~client()
    {
        close_or_leak();
    }

    /* lw_client_free() now; the client is then empty.  LW_EDEADLK on the
     * engine thread (in a callback), where the client is left as it was. */
    void close(std::error_code &ec) noexcept
    {
        int rc = c_ ? lw_client_free(c_) : 0;

        detail::assign(ec, rc);
        if (rc == 0) {
            c_ = nullptr;
            st_.reset();
        }
    }
    void close()
    {
        std::error_code ec;
        close(ec);
        detail::throw_if(ec, "leasewheel::client::close");
    }

    explicit operator bool() const noexcept
    {
        return c_ != nullptr;
    }
    lw_client *native_handle() const noexcept
    {
        return c_;
    }
    /* The client id: the owner fields' prefix in Redis. */
    std::string_view id() const noexcept
    {
        return c_ ? std::string_view(lw_client_id(c_)) : std::string_view();
    }
    /* A snapshot of the counters (zeros for no client). */
    lw_client_stats stats() const noexcept
    {
        lw_client_stats s{};
        if (c_)
            lw_client_get_stats(c_, &s);
        return s;
    }

  private:
    /* What the C callbacks reach through their arg: heap-held, so that it
     * stays put when the client moves. */
    struct state {
        lost_handler on_lost;
        risk_handler on_risk;
        log_handler log;
        lease_lost_handler on_lease_lost;
        lease_risk_handler on_lease_risk;
    };

    /* A risk report's lease left, as the handlers take it. */
    static std::chrono::milliseconds left_of(std::uint64_t left_ms) noexcept
    {
        return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(left_ms));
    }

    static void lost_trampoline(const char *name, std::size_t len, std::uint64_t owner,
                                int reason, void *arg) noexcept
    {
        static_cast<state *>(arg)->on_lost(std::string_view(name, len), owner, reason);
    }

    static void risk_trampoline(const char *name, std::size_t len, std::uint64_t owner,
                                int at_risk, std::uint64_t left_ms, void *arg) noexcept
    {
        static_cast<state *>(arg)->on_risk(std::string_view(name, len), owner, at_risk != 0,
                                           left_of(left_ms));
    }

    static lease lease_of(const lw_lease *l) noexcept
    {
        return lease{static_cast<lw_lease_kind>(l->kind), std::string_view(l->name, l->len),
                     l->owner, l->permit};
    }

    static void lease_lost_trampoline(const lw_lease *l, int reason, void *arg) noexcept
    {
        static_cast<state *>(arg)->on_lease_lost(lease_of(l), reason);
    }

    static void lease_risk_trampoline(const lw_lease *l, int at_risk, std::uint64_t left_ms,
                                      void *arg) noexcept
    {
        static_cast<state *>(arg)->on_lease_risk(lease_of(l), at_risk != 0, left_of(left_ms));
    }

    static void log_trampoline(int level, const char *message, void *arg) noexcept
    {
        static_cast<state *>(arg)->log(level, std::string_view(message));
    }

    void open(const options &o, std::error_code &ec)
    {
        lw_client_config cfg;
        std::vector<const char *> seeds;
        int rc = 0;

        lw_client_config_init(&cfg);
        if (!o.host.empty())
            cfg.host = o.host.c_str();
        if (o.port != 0)
            cfg.port = o.port;
        if (!o.unix_path.empty())
            cfg.unix_path = o.unix_path.c_str();
        if (!o.username.empty())
            cfg.username = o.username.c_str();
        if (!o.password.empty())
            cfg.password = o.password.c_str();
        cfg.db = o.db;
        if (!o.client_id.empty())
            cfg.client_id = o.client_id.c_str();
        for (const std::string &s : o.cluster_seeds)
            seeds.push_back(s.c_str());
        cfg.cluster_seeds = seeds.empty() ? nullptr : seeds.data();
        cfg.cluster_nseeds = static_cast<unsigned>(seeds.size());
        if ((rc = detail::set_ms(cfg.connect_timeout_ms, o.connect_timeout)) ||
            (rc = detail::set_ms(cfg.command_timeout_ms, o.command_timeout)) ||
            (rc = detail::set_ms(cfg.watchdog_timeout_ms, o.watchdog_timeout)) ||
            (rc = detail::set_ms(cfg.tick_ms, o.tick))) {
            detail::assign(ec, rc);
            return;
        }
        if (o.max_hold.count() < 0 || o.permit_clock_skew.count() < 0) {
            detail::assign(ec, LW_EINVAL);
            return;
        }
        if (o.permit_clock_skew.count() > static_cast<std::chrono::milliseconds::rep>(
                                               std::numeric_limits<std::uint32_t>::max())) {
            detail::assign(ec, LW_ERANGE);
            return;
        }
        cfg.max_hold_ms = static_cast<std::uint64_t>(o.max_hold.count());
        cfg.permit_clock_skew_ms = static_cast<std::uint32_t>(o.permit_clock_skew.count());
        cfg.log_level = o.log_level;
        open(cfg, state{o.on_lost, o.on_risk, o.log, o.on_lease_lost, o.on_lease_risk}, ec);
    }

    /* The non-empty handlers replace cfg's callbacks. */
    void open(lw_client_config cfg, state handlers, std::error_code &ec)
    {
        std::unique_ptr<state> st;
        int rc;

        if (handlers.on_lost || handlers.on_risk || handlers.log || handlers.on_lease_lost ||
            handlers.on_lease_risk) {
            st.reset(new state(std::move(handlers)));
            if (st->on_lost) {
                cfg.on_lost = &client::lost_trampoline;
                cfg.lost_arg = st.get();
            }
            if (st->on_risk) {
                cfg.on_risk = &client::risk_trampoline;
                cfg.risk_arg = st.get();
            }
            if (st->log) {
                cfg.log = &client::log_trampoline;
                cfg.log_arg = st.get();
            }
            if (st->on_lease_lost) {
                cfg.on_lease_lost = &client::lease_lost_trampoline;
                cfg.lease_lost_arg = st.get();
            }
            if (st->on_lease_risk) {
                cfg.on_lease_risk = &client::lease_risk_trampoline;
                cfg.lease_risk_arg = st.get();
            }
        }
        rc = lw_client_new(&cfg, &c_);
        detail::assign(ec, rc);
        if (rc == 0)
            st_ = std::move(st);
        else
            c_ = nullptr;
    }

    /* Free it; if that fails (on the engine thread), say so and leak the
     * state rather than free what the engine may still call. */
    void close_or_leak() noexcept
    {
        int rc;

        if (!c_)
            return;
        if ((rc = lw_client_free(c_)) != 0) {
            std::fprintf(stderr, "leasewheel: client not freed: %s\n", lw_strerror(rc));
            (void)st_.release();
        }
        c_ = nullptr;
        st_.reset();
    }

    lw_client *c_ = nullptr;
    std::unique_ptr<state> st_;
};

/*
 * A distributed lock under one name, owned by the calling thread
 * (TimedLockable).  Not copyable or movable, as std::mutex.
 */
class mutex
{
  public:
    /* Reports a failed unlock(): the mutex and the error.  Runs on the
     * thread that called unlock(); must not throw. */
    using error_handler = std::function<void(const mutex &, std::error_code)>;

    mutex(client &c, std::string_view name)
        : mutex(c, name, &lw_lock_new, "leasewheel::mutex")
    {
    }
    /* On failure the mutex is unusable: every call fails with LW_EINVAL. */
    mutex(client &c, std::string_view name, std::error_code &ec)
        : name_(name)
    {
        open(c, &lw_lock_new, ec);
    }

    mutex(const mutex &) = delete;
    mutex &operator=(const mutex &) = delete;
    ~mutex()
    {
        lw_lock_free(h_);
    }

    /* Wait as long as it takes; the watchdog renews it. */
    void lock(std::error_code &ec) noexcept
    {
        acquire(LW_WAIT_FOREVER, ec);
    }
    void lock()
    {
        std::error_code ec;
        acquire(LW_WAIT_FOREVER, ec);
        detail::throw_if(ec, "leasewheel::mutex::lock");
    }

    /* One try (a round trip to Redis): false when another owner holds it. */
    bool try_lock(std::error_code &ec) noexcept
    {
        return acquire(0, ec);
    }
    bool try_lock()
    {
        std::error_code ec;
        bool got = acquire(0, ec);
        detail::throw_if(ec, "leasewheel::mutex::try_lock");
        return got;
    }

    /* Wait at most d (rounded up to whole ms); false when another owner
     * held it all along. */
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d, std::error_code &ec) noexcept
    {
        return acquire(detail::wait_ms(d), ec);
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d)
    {
        std::error_code ec;
        bool got = try_lock_for(d, ec);
        detail::throw_if(ec, "leasewheel::mutex::try_lock_for");
        return got;
    }

    /*
     * Wait until t at most.  The engine waits on the monotonic clock, so t
     * is turned into a wait relative to Clock::now(); if Clock then still
     * reads before t (a system_clock set back meanwhile), it waits the rest.
     * A clock set forward during the wait is not followed: the wait ends
     * when the time it had left at the start has passed.
     */
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t,
                        std::error_code &ec) noexcept
    {
        for (;;) {
            const auto now = Clock::now();
            const std::uint64_t ms = now < t ? detail::wait_ms(t - now) : 0;

            if (acquire(ms, ec))
                return true;
            if (ec || ms == 0 || !(Clock::now() < t))
                return false;
        }
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t)
    {
        std::error_code ec;
        bool got = try_lock_until(t, ec);
        detail::throw_if(ec, "leasewheel::mutex::try_lock_until");
        return got;
    }

    /* Release one hold.  Failures go to the unlock error handler. */
    void unlock() noexcept
    {
        int rc = lw_unlock(h_);

        if (rc < 0) {
            last_unlock_error_.store(rc, std::memory_order_relaxed);
            if (on_unlock_error_)
                on_unlock_error_(*this, std::error_code(rc, category()));
        }
    }
    /* Release one hold; a failure goes to ec only. */
    void unlock(std::error_code &ec) noexcept
    {
        detail::assign(ec, lw_unlock(h_));
    }

    /* The fencing token of the calling thread's current hold (the lock's
     * counter as of its first acquire: reentrant locks see the same), when
     * the mutex is fenced (set_fenced()).  Meaningful to the holder only;
     * 0 before any, and when not fenced. */
    std::uint64_t token() const noexcept
    {
        return token_.load(std::memory_order_relaxed);
    }

    /* Whether the calling thread holds it; whether anybody does. */
    bool is_held(std::error_code &ec) const noexcept
    {
        return query(lw_is_held(h_), ec);
    }
    bool is_held() const
    {
        std::error_code ec;
        bool held = is_held(ec);
        detail::throw_if(ec, "leasewheel::mutex::is_held");
        return held;
    }
    bool is_locked(std::error_code &ec) const noexcept
    {
        return query(lw_is_locked(h_), ec);
    }
    bool is_locked() const
    {
        std::error_code ec;
        bool locked = is_locked(ec);
        detail::throw_if(ec, "leasewheel::mutex::is_locked");
        return locked;
    }

    /*
     * Watchdog locks taken through this mutex from now on are given up
     * after d held (on_lost: LW_LOST_HELD_TOO_LONG; the key expires at the
     * end of its lease), instead of after the client's max_hold; 0: the
     * client's.  LW_EINVAL for a negative d (or no lock), LW_ERANGE over
     * LW_MAX_LEASE_MS * 1000 ms.
     */
    void set_max_hold(std::chrono::milliseconds d, std::error_code &ec) noexcept
    {
        detail::assign(ec, d.count() < 0 ? LW_EINVAL
                                         : lw_lock_set_max_hold(
                                               h_, static_cast<std::uint64_t>(d.count())));
    }
    void set_max_hold(std::chrono::milliseconds d)
    {
        std::error_code ec;
        set_max_hold(d, ec);
        detail::throw_if(ec, "leasewheel::mutex::set_max_hold");
    }

    /* Whether first acquires from now on draw a fencing token (token()):
     * Redisson's RFencedLock, whose counter stays in Redis; not by default
     * (lw_lock_set_fenced()). */
    void set_fenced(bool fenced, std::error_code &ec) noexcept
    {
        detail::assign(ec, lw_lock_set_fenced(h_, fenced ? 1 : 0));
    }
    void set_fenced(bool fenced)
    {
        std::error_code ec;
        set_fenced(fenced, ec);
        detail::throw_if(ec, "leasewheel::mutex::set_fenced");
    }

    /* Replace the unlock error handler (empty: none).  Not while other
     * threads use the mutex. */
    void set_unlock_error_handler(error_handler h)
    {
        on_unlock_error_ = std::move(h);
    }

    /* The last error unlock() reported (by any thread), cleared. */
    std::error_code take_unlock_error() noexcept
    {
        int rc = last_unlock_error_.exchange(0, std::memory_order_relaxed);
        return rc ? std::error_code(rc, category()) : std::error_code();
    }

    const std::string &name() const noexcept
    {
        return name_;
    }
    lw_lock *native_handle() const noexcept
    {
        return h_;
    }

    /* The default unlock error handler: one line on stderr. */
    static void print_unlock_error(const mutex &m, std::error_code ec) noexcept
    {
        std::fprintf(stderr, "leasewheel: unlock of \"%.*s\" failed: %s\n",
                     static_cast<int>(m.name().size()), m.name().data(), lw_strerror(ec.value()));
    }

  protected:
    /* The handle's constructor (lw_lock_new(), lw_fair_lock_new()). */
    using opener = int (*)(lw_client *, const void *, std::size_t, lw_lock **);

    mutex(client &c, std::string_view name, opener open_handle, const char *what)
        : name_(name)
    {
        std::error_code ec;
        open(c, open_handle, ec);
        detail::throw_if(ec, what);
    }
    mutex(client &c, std::string_view name, opener open_handle, std::error_code &ec)
        : name_(name)
    {
        open(c, open_handle, ec);
    }

  private:
    void open(client &c, opener open_handle, std::error_code &ec)
    {
        detail::assign(ec, open_handle(c.native_handle(), name_.data(), name_.size(), &h_));
        if (ec)
            h_ = nullptr;
    }

    /* LW_WAIT_FOREVER: lock; else try for wait_ms.  True when acquired. */
    bool acquire(std::uint64_t wait_ms, std::error_code &ec) noexcept
    {
        std::uint64_t tok = 0;
        int rc = wait_ms == LW_WAIT_FOREVER ? lw_lock_acquire(h_, &tok)
                                            : lw_trylock(h_, wait_ms, 0, &tok);

        if (rc == 0)
            token_.store(tok, std::memory_order_relaxed);
        detail::assign(ec, rc == LW_ELOCKED ? 0 : rc);
        return rc == 0;
    }

    static bool query(int rc, std::error_code &ec) noexcept
    {
        detail::assign(ec, rc);
        return rc > 0;
    }

    std::string name_;
    lw_lock *h_ = nullptr;
    std::atomic<std::uint64_t> token_{0};
    std::atomic<int> last_unlock_error_{0};
    error_handler on_unlock_error_{&mutex::print_unlock_error};
};

/*
 * A fair distributed lock under one name (TimedLockable), in Redisson's
 * RFairLock format (lw_fair_lock_new()): first come, first served across
 * every client of the name, each waiter's place in the queue a lease the
 * watchdog renews.  Everything else as a mutex.  Added in 0.4.
 */
class fair_mutex : public mutex
{
  public:
    fair_mutex(client &c, std::string_view name)
        : mutex(c, name, &lw_fair_lock_new, "leasewheel::fair_mutex")
    {
    }
    /* On failure the mutex is unusable: every call fails with LW_EINVAL. */
    fair_mutex(client &c, std::string_view name, std::error_code &ec)
        : mutex(c, name, &lw_fair_lock_new, ec)
    {
    }
};

/*
 * A distributed read-write lock under one name (SharedTimedLockable), in
 * Redisson's RReadWriteLock format (lw_read_lock_new(),
 * lw_write_lock_new()), owned by the calling thread: lock() and unlock()
 * hold the write lock, alone; lock_shared() and unlock_shared() the read
 * lock, shared with other readers.  For std::unique_lock and
 * std::shared_lock.  The writer may read too (a downgrade); a reader's
 * waiting lock() fails with LW_EDEADLK (it would wait on itself: no
 * upgrade), its try_lock() returns false.  A name that holds a plain lock
 * fails with LW_EWRONGKIND.  Not copyable or movable, as
 * std::shared_mutex.  Added in 0.4.
 */
class shared_mutex
{
  public:
    shared_mutex(client &c, std::string_view name)
        : name_(name)
    {
        std::error_code ec;
        open(c, ec);
        detail::throw_if(ec, "leasewheel::shared_mutex");
    }
    /* On failure the mutex is unusable: every call fails with LW_EINVAL. */
    shared_mutex(client &c, std::string_view name, std::error_code &ec)
        : name_(name)
    {
        open(c, ec);
    }

    shared_mutex(const shared_mutex &) = delete;
    shared_mutex &operator=(const shared_mutex &) = delete;
    ~shared_mutex()
    {
        lw_lock_free(r_);
        lw_lock_free(w_);
    }

    /* The write lock: as leasewheel::mutex's calls. */
    void lock(std::error_code &ec) noexcept
    {
        acquire(w_, LW_WAIT_FOREVER, ec);
    }
    void lock()
    {
        checked(w_, LW_WAIT_FOREVER, "leasewheel::shared_mutex::lock");
    }
    bool try_lock(std::error_code &ec) noexcept
    {
        return acquire(w_, 0, ec);
    }
    bool try_lock()
    {
        return checked(w_, 0, "leasewheel::shared_mutex::try_lock");
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d)
    {
        return checked(w_, detail::wait_ms(d), "leasewheel::shared_mutex::try_lock_for");
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t)
    {
        std::error_code ec;
        bool got = acquire_until(w_, t, ec);
        detail::throw_if(ec, "leasewheel::shared_mutex::try_lock_until");
        return got;
    }
    /* Release one write hold; a failure is kept for take_unlock_error(). */
    void unlock() noexcept
    {
        release(w_);
    }

    /* The read lock, the same way. */
    void lock_shared(std::error_code &ec) noexcept
    {
        acquire(r_, LW_WAIT_FOREVER, ec);
    }
    void lock_shared()
    {
        checked(r_, LW_WAIT_FOREVER, "leasewheel::shared_mutex::lock_shared");
    }
    bool try_lock_shared(std::error_code &ec) noexcept
    {
        return acquire(r_, 0, ec);
    }
    bool try_lock_shared()
    {
        return checked(r_, 0, "leasewheel::shared_mutex::try_lock_shared");
    }
    template <class Rep, class Period>
    bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &d)
    {
        return checked(r_, detail::wait_ms(d), "leasewheel::shared_mutex::try_lock_shared_for");
    }
    template <class Clock, class Duration>
    bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration> &t)
    {
        std::error_code ec;
        bool got = acquire_until(r_, t, ec);
        detail::throw_if(ec, "leasewheel::shared_mutex::try_lock_shared_until");
        return got;
    }
    void unlock_shared() noexcept
    {
        release(r_);
    }

    /* The fencing token of the calling thread's last write acquire, when
     * fenced (set_fenced(); reads have none); meaningful to the writer
     * only, 0 before any. */
    std::uint64_t token() const noexcept
    {
        return token_.load(std::memory_order_relaxed);
    }

    /* The last error unlock() or unlock_shared() met (by any thread),
     * cleared. */
    std::error_code take_unlock_error() noexcept
    {
        int rc = last_unlock_error_.exchange(0, std::memory_order_relaxed);
        return rc ? std::error_code(rc, category()) : std::error_code();
    }

    const std::string &name() const noexcept
    {
        return name_;
    }
    lw_lock *native_read_handle() const noexcept
    {
        return r_;
    }
    lw_lock *native_write_handle() const noexcept
    {
        return w_;
    }

    /* Whether write acquires from now on draw a fencing token (token()),
     * as mutex::set_fenced(). */
    void set_fenced(bool fenced, std::error_code &ec) noexcept
    {
        detail::assign(ec, lw_lock_set_fenced(w_, fenced ? 1 : 0));
    }
    void set_fenced(bool fenced)
    {
        std::error_code ec;
        set_fenced(fenced, ec);
        detail::throw_if(ec, "leasewheel::shared_mutex::set_fenced");
    }

  private:
    void open(client &c, std::error_code &ec)
    {
        detail::assign(ec, lw_read_lock_new(c.native_handle(), name_.data(), name_.size(), &r_));
        if (!ec)
            detail::assign(ec, lw_write_lock_new(c.native_handle(), name_.data(), name_.size(),
                                                 &w_));
        if (ec) {
            lw_lock_free(r_);
            r_ = w_ = nullptr;
        }
    }

    /* LW_WAIT_FOREVER: wait as long as it takes; else try for wait_ms. */
    bool acquire(lw_lock *h, std::uint64_t wait_ms, std::error_code &ec) noexcept
    {
        std::uint64_t tok = 0;
        int rc = wait_ms == LW_WAIT_FOREVER ? lw_lock_acquire(h, &tok)
                                            : lw_trylock(h, wait_ms, 0, &tok);

        if (rc == 0 && h == w_)
            token_.store(tok, std::memory_order_relaxed);
        detail::assign(ec, rc == LW_ELOCKED ? 0 : rc);
        return rc == 0;
    }

    bool checked(lw_lock *h, std::uint64_t wait_ms, const char *what)
    {
        std::error_code ec;
        bool got = acquire(h, wait_ms, ec);
        detail::throw_if(ec, what);
        return got;
    }

    /* As leasewheel::mutex::try_lock_until(). */
    template <class Clock, class Duration>
    bool acquire_until(lw_lock *h, const std::chrono::time_point<Clock, Duration> &t,
                       std::error_code &ec) noexcept
    {
        for (;;) {
            const auto now = Clock::now();
            const std::uint64_t ms = now < t ? detail::wait_ms(t - now) : 0;

            if (acquire(h, ms, ec))
                return true;
            if (ec || ms == 0 || !(Clock::now() < t))
                return false;
        }
    }

    void release(lw_lock *h) noexcept
    {
        int rc = lw_unlock(h);

        if (rc < 0)
            last_unlock_error_.store(rc, std::memory_order_relaxed);
    }

    std::string name_;
    lw_lock *r_ = nullptr;
    lw_lock *w_ = nullptr;
    std::atomic<std::uint64_t> token_{0};
    std::atomic<int> last_unlock_error_{0};
};

/*
 * Several names held at once by the calling thread, or none
 * (TimedLockable), as lw_multi_new() over plain locks: for std::lock_guard
 * and std::unique_lock over a set ("a transfer between two accounts").
 * Every client takes the names in one order, so two multi_locks over the
 * same names never wait for each other, whatever order each was given.
 * Renewed by the watchdog; a name lost is the whole set's, told once
 * (lw_lease's multi) and the rest released.  fenced: each name draws a
 * fencing token (tokens(); lw_lock_set_fenced(), added in 0.5).  Not
 * copyable or movable.  Added in 0.4.
 */
class multi_lock
{
  public:
    multi_lock(client &c, const std::vector<std::string_view> &names, bool fenced = false)
    {
        std::error_code ec;
        open(c, names, fenced, ec);
        detail::throw_if(ec, "leasewheel::multi_lock");
    }
    multi_lock(client &c, std::initializer_list<std::string_view> names, bool fenced = false)
        : multi_lock(c, std::vector<std::string_view>(names), fenced)
    {
    }
    /* On failure the lock is unusable: every call fails with LW_EINVAL. */
    multi_lock(client &c, const std::vector<std::string_view> &names, std::error_code &ec,
               bool fenced = false)
    {
        open(c, names, fenced, ec);
    }

    multi_lock(const multi_lock &) = delete;
    multi_lock &operator=(const multi_lock &) = delete;
    ~multi_lock()
    {
        lw_multi_free(m_);
    }

    void lock(std::error_code &ec) noexcept
    {
        acquire(LW_WAIT_FOREVER, ec);
    }
    void lock()
    {
        std::error_code ec;
        acquire(LW_WAIT_FOREVER, ec);
        detail::throw_if(ec, "leasewheel::multi_lock::lock");
    }
    bool try_lock(std::error_code &ec) noexcept
    {
        return acquire(0, ec);
    }
    bool try_lock()
    {
        std::error_code ec;
        bool got = acquire(0, ec);
        detail::throw_if(ec, "leasewheel::multi_lock::try_lock");
        return got;
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d)
    {
        std::error_code ec;
        bool got = acquire(detail::wait_ms(d), ec);
        detail::throw_if(ec, "leasewheel::multi_lock::try_lock_for");
        return got;
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t)
    {
        std::error_code ec;

        for (;;) {
            const auto now = Clock::now();
            const std::uint64_t ms = now < t ? detail::wait_ms(t - now) : 0;

            if (acquire(ms, ec))
                return true;
            detail::throw_if(ec, "leasewheel::multi_lock::try_lock_until");
            if (ms == 0 || !(Clock::now() < t))
                return false;
        }
    }
    /* One hold of every name released; a failure (LW_ENOTOWNER after the
     * set was lost) is kept for take_unlock_error(). */
    void unlock() noexcept
    {
        int rc = lw_multi_unlock(m_);

        if (rc < 0)
            last_unlock_error_.store(rc, std::memory_order_relaxed);
    }

    /* Each name's fencing token from the calling thread's last acquire, in
     * the order given, when fenced (0 each else); meaningful to the holder
     * only. */
    std::vector<std::uint64_t> tokens() const
    {
        std::lock_guard<std::mutex> g(tokens_lock_);
        return tokens_;
    }
    std::error_code take_unlock_error() noexcept
    {
        int rc = last_unlock_error_.exchange(0, std::memory_order_relaxed);
        return rc ? std::error_code(rc, category()) : std::error_code();
    }
    lw_multi *native_handle() const noexcept
    {
        return m_;
    }

  private:
    void open(client &c, const std::vector<std::string_view> &names, bool fenced,
              std::error_code &ec)
    {
        std::vector<lw_lock *> locks;
        int rc = 0;

        for (std::string_view n : names) {
            lw_lock *l = nullptr;

            if ((rc = lw_lock_new(c.native_handle(), n.data(), n.size(), &l)) != 0)
                break;
            locks.push_back(l);
            if ((rc = lw_lock_set_fenced(l, fenced ? 1 : 0)) != 0)
                break;
        }
        if (rc == 0)
            rc = lw_multi_new(locks.data(), locks.size(), &m_);
        for (lw_lock *l : locks)
            lw_lock_free(l);
        tokens_.assign(names.size(), 0);
        detail::assign(ec, rc);
    }

    bool acquire(std::uint64_t wait_ms, std::error_code &ec) noexcept
    {
        std::uint64_t got[LW_MULTI_MAX];
        int rc = lw_multi_acquire(m_, lw_owner_self(), wait_ms, 0, got);

        if (rc == 0) {
            std::lock_guard<std::mutex> g(tokens_lock_);
            tokens_.assign(got, got + tokens_.size());
        }
        detail::assign(ec, rc == LW_ELOCKED ? 0 : rc);
        return rc == 0;
    }

    lw_multi *m_ = nullptr;
    std::vector<std::uint64_t> tokens_;
    mutable std::mutex tokens_lock_;
    std::atomic<int> last_unlock_error_{0};
};

/*
 * leasewheel::election - a candidate for leadership of a name
 * (<leasewheel/election.h>): campaign, proclaim, resign, the leader in one
 * read, and the leader's belief.  Resign stops nothing: stop the work,
 * then resign; the destructor resigns a leader.
 */
class election
{
  public:
    election(client &c, std::string_view name)
    {
        std::error_code ec;
        detail::assign(ec, lw_election_new(c.native_handle(), name.data(), name.size(), &e_));
        detail::throw_if(ec, "leasewheel::election");
    }
    /* On failure the election is unusable: every call fails with LW_EINVAL. */
    election(client &c, std::string_view name, std::error_code &ec)
    {
        detail::assign(ec, lw_election_new(c.native_handle(), name.data(), name.size(), &e_));
    }
    election(const election &) = delete;
    election &operator=(const election &) = delete;
    ~election()
    {
        lw_election_free(e_);
    }

    /* Lead, waiting up to d while another does: the term, or 0 when the
     * wait ran out (ec set on an error). */
    template <class Rep, class Period>
    std::uint64_t campaign(std::string_view value, const std::chrono::duration<Rep, Period> &d,
                           std::error_code &ec) noexcept
    {
        return campaign_ms(value, detail::wait_ms(d), ec);
    }
    std::uint64_t campaign(std::string_view value, std::error_code &ec) noexcept
    {
        return campaign_ms(value, LW_WAIT_FOREVER, ec);
    }
    std::uint64_t campaign(std::string_view value)
    {
        std::error_code ec;
        std::uint64_t term = campaign_ms(value, LW_WAIT_FOREVER, ec);
        detail::throw_if(ec, "leasewheel::election::campaign");
        return term;
    }
    /* Campaign in the fair lock's queue (true, the default) or in this
     * client's line only (lw_election_set_queued()): before the first
     * campaign. */
    void set_queued(bool queued, std::error_code &ec) noexcept
    {
        detail::assign(ec, lw_election_set_queued(e_, queued ? 1 : 0));
    }
    /* A new value while this candidate leads in its term; false when it
     * does not. */
    bool proclaim(std::string_view value, std::error_code &ec) noexcept
    {
        int rc = lw_election_proclaim(e_, value.data(), value.size());

        detail::assign(ec, rc == LW_ENOTOWNER ? 0 : rc);
        return rc == 0;
    }
    /* Stop leading; false when this candidate did not lead. */
    bool resign(std::error_code &ec) noexcept
    {
        int rc = lw_election_resign(e_);

        detail::assign(ec, rc == LW_ENOTOWNER ? 0 : rc);
        return rc == 0;
    }
    lw_leader leader(std::error_code &ec) const noexcept
    {
        lw_leader l{};

        detail::assign(ec, lw_election_leader(e_, &l));
        return l;
    }
    /* Until when this candidate surely leads (lw_clock_now()'s ns; 0:
     * it does not): read it before each side effect. */
    std::uint64_t sure_until() const noexcept
    {
        return lw_election_sure_until(e_);
    }
    /* Whether it surely leads now (Curator's hasLeadership()). */
    bool is_leader() const noexcept
    {
        return lw_clock_now() < lw_election_sure_until(e_);
    }
    std::uint64_t term() const noexcept
    {
        return lw_election_term(e_);
    }
    lw_election *native_handle() const noexcept
    {
        return e_;
    }

  private:
    std::uint64_t campaign_ms(std::string_view value, std::uint64_t wait_ms,
                              std::error_code &ec) noexcept
    {
        std::uint64_t term = 0;
        int rc = lw_election_campaign(e_, value.data(), value.size(), wait_ms, &term);

        detail::assign(ec, rc == LW_ELOCKED ? 0 : rc);
        return rc == 0 ? term : 0;
    }

    lw_election *e_ = nullptr;
};

class semaphore;

/*
 * A permit of a semaphore, or none (default-constructed, moved from, or
 * released).  Move-only; it may move to another thread, which then
 * releases it.  It keeps the semaphore's handle alive, so it may outlive
 * the leasewheel::semaphore it came from (not the client: a release after
 * the client is gone fails with LW_ESHUTDOWN, and the permit expires at
 * the end of its lease).  Destruction releases it; a failed release (the
 * permit expired: LW_ENOPERMIT; a transport error) is dropped there:
 * release(std::error_code&) says it.  Added in 0.4.
 */
class permit
{
  public:
    permit() noexcept = default;
    permit(permit &&o) noexcept
        : sem_(std::move(o.sem_)), id_(o.id_)
    {
    }
    permit &operator=(permit &&o) noexcept
    {
        if (this != &o) {
            release_quietly();
            sem_ = std::move(o.sem_);
            id_ = o.id_;
        }
        return *this;
    }
    permit(const permit &) = delete;
    permit &operator=(const permit &) = delete;
    ~permit()
    {
        release_quietly();
    }

    /* Whether it holds a permit. */
    explicit operator bool() const noexcept
    {
        return sem_ != nullptr;
    }

    /* Its id; its 32 hex characters, as Redisson shows ids ("" for none). */
    const lw_permit &id() const noexcept
    {
        return id_;
    }
    std::string hex() const
    {
        char buf[LW_PERMIT_HEX_LEN + 1];
        return sem_ ? std::string(lw_permit_hex(&id_, buf)) : std::string();
    }

    /* Release it now (nothing for none).  Either way it holds none after. */
    void release(std::error_code &ec) noexcept
    {
        ec.clear();
        if (sem_)
            detail::assign(ec, lw_permit_release(sem_.get(), &id_, 1));
        sem_.reset();
    }
    void release()
    {
        std::error_code ec;
        release(ec);
        detail::throw_if(ec, "leasewheel::permit::release");
    }

  private:
    friend class semaphore;
    permit(std::shared_ptr<lw_semaphore> sem, const lw_permit &id) noexcept
        : sem_(std::move(sem)), id_(id)
    {
    }
    void release_quietly() noexcept
    {
        std::error_code ec;
        release(ec);
    }

    std::shared_ptr<lw_semaphore> sem_;
    lw_permit id_{};
};

/*
 * One semaphore of expiring permits (<leasewheel/semaphore.h> says what
 * is in Redis, and why every permit has a lease).  acquire() waits as long
 * as it takes; try_acquire_for() and try_acquire_until() return an empty
 * permit when none came in time.  Each permit lasts `lease` unless
 * released first; a lease of 0 (the default) means the client's watchdog
 * renews it until it is released (or lost: on_lost names the semaphore and
 * lw_permit_owner(&p.id()); on_lease_lost gives the whole id in
 * lease::permit).  add_permits() and acquired() are the other counts'
 * calls.  Any member may be called from any thread at once.  Added in
 * 0.4.
 */
class semaphore
{
  public:
    semaphore(client &c, std::string_view name)
        : name_(name)
    {
        std::error_code ec;
        open(c, ec);
        detail::throw_if(ec, "leasewheel::semaphore");
    }
    /* On failure every call fails with LW_EINVAL. */
    semaphore(client &c, std::string_view name, std::error_code &ec)
        : name_(name)
    {
        open(c, ec);
    }

    /* Create it with n permits if it does not exist: true when created. */
    bool try_set_permits(std::int64_t n, std::error_code &ec) noexcept
    {
        int rc = lw_semaphore_try_set(h_.get(), n);
        detail::assign(ec, rc);
        return rc == 1;
    }
    bool try_set_permits(std::int64_t n)
    {
        std::error_code ec;
        bool set = try_set_permits(n, ec);
        detail::throw_if(ec, "leasewheel::semaphore::try_set_permits");
        return set;
    }
    /* Make available + acquired = n. */
    void set_permits(std::int64_t n, std::error_code &ec) noexcept
    {
        detail::assign(ec, lw_semaphore_set(h_.get(), n));
    }
    void set_permits(std::int64_t n)
    {
        std::error_code ec;
        set_permits(n, ec);
        detail::throw_if(ec, "leasewheel::semaphore::set_permits");
    }
    /* Add delta (may be negative) to the permits available, creating the
     * semaphore with delta when it does not exist: the count after. */
    std::int64_t add_permits(std::int64_t delta, std::error_code &ec) noexcept
    {
        std::int64_t v = 0;
        detail::assign(ec, lw_semaphore_add(h_.get(), delta, &v));
        return v;
    }
    std::int64_t add_permits(std::int64_t delta)
    {
        std::error_code ec;
        std::int64_t v = add_permits(delta, ec);
        detail::throw_if(ec, "leasewheel::semaphore::add_permits");
        return v;
    }
    /* The permits acquired now and not expired (expired ones reclaimed
     * first). */
    std::int64_t acquired(std::error_code &ec) const noexcept
    {
        std::int64_t v = 0;
        detail::assign(ec, lw_semaphore_acquired(h_.get(), &v));
        return v;
    }
    std::int64_t acquired() const
    {
        std::error_code ec;
        std::int64_t v = acquired(ec);
        detail::throw_if(ec, "leasewheel::semaphore::acquired");
        return v;
    }
    /* The permits available now (expired ones reclaimed first). */
    std::int64_t available(std::error_code &ec) const noexcept
    {
        std::int64_t v = 0;
        detail::assign(ec, lw_semaphore_available(h_.get(), &v));
        return v;
    }
    std::int64_t available() const
    {
        std::error_code ec;
        std::int64_t v = available(ec);
        detail::throw_if(ec, "leasewheel::semaphore::available");
        return v;
    }

    /* Wait as long as it takes. */
    permit acquire(std::chrono::milliseconds lease, std::error_code &ec) noexcept
    {
        return take(LW_WAIT_FOREVER, lease, ec);
    }
    permit acquire(std::chrono::milliseconds lease = std::chrono::milliseconds(0))
    {
        std::error_code ec;
        permit p = acquire(lease, ec);
        detail::throw_if(ec, "leasewheel::semaphore::acquire");
        return p;
    }

    /* Wait at most d (rounded up to whole ms): an empty permit when none
     * came. */
    template <class Rep, class Period>
    permit try_acquire_for(const std::chrono::duration<Rep, Period> &d,
                           std::chrono::milliseconds lease, std::error_code &ec) noexcept
    {
        return take(detail::wait_ms(d), lease, ec);
    }
    template <class Rep, class Period>
    permit try_acquire_for(const std::chrono::duration<Rep, Period> &d,
                           std::chrono::milliseconds lease = std::chrono::milliseconds(0))
    {
        std::error_code ec;
        permit p = try_acquire_for(d, lease, ec);
        detail::throw_if(ec, "leasewheel::semaphore::try_acquire_for");
        return p;
    }

    /* Wait until t at most (as mutex::try_lock_until() does). */
    template <class Clock, class Duration>
    permit try_acquire_until(const std::chrono::time_point<Clock, Duration> &t,
                             std::chrono::milliseconds lease, std::error_code &ec) noexcept
    {
        for (;;) {
            const auto now = Clock::now();
            const std::uint64_t ms = now < t ? detail::wait_ms(t - now) : 0;
            permit p = take(ms, lease, ec);

            if (p || ec || ms == 0 || !(Clock::now() < t))
                return p;
        }
    }
    template <class Clock, class Duration>
    permit try_acquire_until(const std::chrono::time_point<Clock, Duration> &t,
                             std::chrono::milliseconds lease = std::chrono::milliseconds(0))
    {
        std::error_code ec;
        permit p = try_acquire_until(t, lease, ec);
        detail::throw_if(ec, "leasewheel::semaphore::try_acquire_until");
        return p;
    }

    const std::string &name() const noexcept
    {
        return name_;
    }
    lw_semaphore *native_handle() const noexcept
    {
        return h_.get();
    }

  private:
    void open(client &c, std::error_code &ec)
    {
        lw_semaphore *h = nullptr;

        detail::assign(ec, lw_semaphore_new(c.native_handle(), name_.data(), name_.size(), &h));
        if (!ec)
            h_.reset(h, lw_semaphore_free);
    }

    /* One permit for lease, waiting wait_ms; empty when none came. */
    permit take(std::uint64_t wait_ms, std::chrono::milliseconds lease,
                std::error_code &ec) noexcept
    {
        lw_permit id{};
        int rc = lease.count() < 0
                     ? LW_EINVAL
                     : lw_permit_acquire(h_.get(), 1, wait_ms,
                                         static_cast<std::uint64_t>(lease.count()), &id);

        detail::assign(ec, rc == LW_ELOCKED ? 0 : rc);
        return rc == 0 ? permit(h_, id) : permit();
    }

    std::string name_;
    std::shared_ptr<lw_semaphore> h_;
};

} // namespace leasewheel

/* LW_E* codes as std::error_codes of leasewheel::category(), so that
 * `ec == LW_ELOCKED` compares as one expects. */
namespace std
{
template <>
struct is_error_code_enum<lw_error> : true_type {
};
} // namespace std

inline std::error_code make_error_code(lw_error e) noexcept
{
    return std::error_code(static_cast<int>(e), leasewheel::category());
}

#endif /* C++17 */
#endif
