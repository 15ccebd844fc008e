/*
 * test_hpp.cc - <leasewheel.hpp> on a private redis-server: client and
 * mutex in std::lock_guard, std::unique_lock (try_lock_for, try_lock_until
 * on steady_clock and system_clock) and std::scoped_lock (two mutexes, two
 * threads, opposite orders), fencing tokens, the error category with its
 * throwing and std::error_code overloads, unlock's error handler,
 * on_lost when the key is deleted behind the watchdog's back, on_risk when
 * the link goes silent (tests/fixtures/proxy.h) before and after the
 * lock comes back safe and before it is lost, max_hold and set_max_hold
 * (lost as held too long, the key left to its lease), the log hook's
 * lines for a killed connection and its return, semaphores and their
 * permits, and on_lease_lost's kinds.  Built with
 * g++ and clang++ as C++17 and C++20 (tests/cxx/meson.build).  Prints each
 * failed check; exits 1 if any.
 */
#include <leasewheel.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

extern "C" {
#include "proxy.h"        /* C, without extern "C" of its own */
#include "redis_server.h" /* C, without extern "C" of its own */
}

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

#include "check.h"

/* What the standard's lock types need, checked at compile time. */
static_assert(noexcept(std::declval<leasewheel::mutex &>().unlock()), "unlock is noexcept");
static_assert(std::is_same_v<decltype(std::declval<leasewheel::mutex &>().try_lock()), bool>);
static_assert(std::is_same_v<decltype(std::declval<leasewheel::mutex &>().try_lock_for(1ms)),
                             bool>);
static_assert(std::is_same_v<decltype(std::declval<leasewheel::mutex &>().try_lock_until(
                                 clk::now())),
                             bool>);
static_assert(!std::is_copy_constructible_v<leasewheel::mutex> &&
              !std::is_move_constructible_v<leasewheel::mutex>);
static_assert(std::is_constructible_v<leasewheel::client, const lw_client_config &,
                                      leasewheel::lost_handler, leasewheel::risk_handler>);
static_assert(std::is_constructible_v<leasewheel::client, const lw_client_config &,
                                      leasewheel::lost_handler, leasewheel::risk_handler,
                                      std::error_code &>);
static_assert(noexcept(std::declval<leasewheel::mutex &>().set_max_hold(
    std::declval<std::chrono::milliseconds>(), std::declval<std::error_code &>())));
static_assert(!std::is_copy_constructible_v<leasewheel::client> &&
              std::is_nothrow_move_constructible_v<leasewheel::client> &&
              std::is_nothrow_move_assignable_v<leasewheel::client>);

static long long ms_since(clk::time_point t0)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - t0).count();
}

static leasewheel::options opts_for(int port)
{
    leasewheel::options o;
    o.port = port;
    return o;
}

/* A port on 127.0.0.1 where nothing listens: bound, then closed. */
static int dead_port()
{
    sockaddr_in a{};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;

    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* lock_guard holds and releases; the token grows with each first acquire
 * and stays the same for a reentrant one. */
static void guard_and_tokens(int port)
{
    leasewheel::client c(opts_for(port));
    leasewheel::mutex m(c, "hpp:guard");
    std::uint64_t prev = 0;

    CHECK(m.name() == "hpp:guard" && m.native_handle() != nullptr && !c.id().empty());
    m.set_fenced(true);
    for (int i = 0; i < 3; i++) {
        std::lock_guard<leasewheel::mutex> g(m);
        CHECK(m.is_held() && m.is_locked());
        CHECK(m.token() > prev);
        prev = m.token();
        {
            std::lock_guard<leasewheel::mutex> again(m); /* reentrant */
            CHECK(m.token() == prev);
        }
        CHECK(m.is_held());
    }
    CHECK(!m.is_locked());
    CHECK(c.stats().locks_held == 0);
}

/* Another client holds the name: unique_lock's timed tries time out after
 * their wait, and succeed when it is unlocked during one. */
static void unique_lock_timeouts(int port)
{
    leasewheel::client a(opts_for(port));
    lw_client_config cfg;
    lw_client_config_init(&cfg);
    cfg.port = port;
    leasewheel::client b(cfg);
    leasewheel::mutex ma(a, "hpp:timed"), mb(b, "hpp:timed");

    std::unique_lock<leasewheel::mutex> hold(mb);
    auto t0 = clk::now();
    {
        std::unique_lock<leasewheel::mutex> lk(ma, 200ms);
        CHECK(!lk.owns_lock());
    }
    long long waited = ms_since(t0);
    CHECK(waited >= 200 && waited < 3000);

    t0 = clk::now();
    {
        std::unique_lock<leasewheel::mutex> lk(ma, clk::now() + 200ms);
        CHECK(!lk.owns_lock());
    }
    waited = ms_since(t0);
    CHECK(waited >= 200 && waited < 3000);

    t0 = clk::now();
    {
        std::unique_lock<leasewheel::mutex> lk(ma, std::chrono::system_clock::now() + 200ms);
        CHECK(!lk.owns_lock());
    }
    waited = ms_since(t0);
    CHECK(waited >= 190 && waited < 3000); /* system_clock may step */

    /* Deadlines passed and negative waits try once. */
    CHECK(!ma.try_lock_until(clk::now() - 1s));
    CHECK(!ma.try_lock_for(-5ms));
    CHECK(!ma.try_lock());
    hold.unlock();

    /* Unlocked 150 ms into a 5 s wait: the waiter is woken, not timed out. */
    std::atomic<bool> held{false};
    std::thread other([&] {
        std::lock_guard<leasewheel::mutex> g(mb);
        held = true;
        std::this_thread::sleep_for(150ms);
    });
    while (!held)
        std::this_thread::sleep_for(1ms);
    t0 = clk::now();
    {
        std::unique_lock<leasewheel::mutex> lk(ma, 5s);
        CHECK(lk.owns_lock());
        waited = ms_since(t0);
        CHECK(waited >= 50 && waited < 4000);
    }
    other.join();
    {
        std::unique_lock<leasewheel::mutex> lk(ma, std::chrono::system_clock::now() + 1s);
        CHECK(lk.owns_lock());
    }
    CHECK(!ma.is_locked());
}

/* Two threads take the same two mutexes in opposite orders, many times:
 * std::scoped_lock's try-and-back-off keeps them out of a deadlock, and
 * nobody is ever inside with somebody else. */
static void scoped_lock_two(int port)
{
    leasewheel::client c(opts_for(port));
    leasewheel::mutex m1(c, "hpp:one"), m2(c, "hpp:two");
    std::atomic<int> inside{0}, overlaps{0}, done{0}, rounds{0};
    const int n = 25;

    auto run = [&](leasewheel::mutex &first, leasewheel::mutex &second) {
        for (int i = 0; i < n; i++) {
            std::scoped_lock lk(first, second);
            if (inside.fetch_add(1) != 0)
                overlaps++;
            std::this_thread::sleep_for(1ms);
            inside.fetch_sub(1);
            rounds++;
        }
        done++;
    };
    auto t0 = clk::now();
    std::thread t1(run, std::ref(m1), std::ref(m2)), t2(run, std::ref(m2), std::ref(m1));
    while (done < 2 && ms_since(t0) < 20000)
        std::this_thread::sleep_for(5ms);
    if (done < 2) {
        std::fprintf(stderr, "scoped_lock: %d of %d rounds in 20 s: deadlocked\n",
                     rounds.load(), 2 * n);
        std::_Exit(1); /* the threads cannot be joined */
    }
    t1.join();
    t2.join();
    std::printf("scoped_lock: %d rounds in %lld ms\n", rounds.load(), ms_since(t0));
    CHECK(rounds == 2 * n && overlaps == 0);
    CHECK(!m1.is_locked() && !m2.is_locked());
}

/* Nothing listens: the error_code overloads say LW_ECONNREFUSED through
 * the category, and the others throw it as std::system_error. */
static void errors()
{
    int port = dead_port();
    leasewheel::client c(opts_for(port));
    leasewheel::mutex m(c, "hpp:refused");
    std::error_code ec;

    CHECK(port > 0);
    m.lock(ec);
    CHECK(ec == LW_ECONNREFUSED);
    CHECK(ec.value() == LW_ECONNREFUSED && ec.category() == leasewheel::category());
    CHECK(std::strcmp(ec.category().name(), "leasewheel") == 0);
    CHECK(ec.message() == lw_strerror(LW_ECONNREFUSED));
    CHECK(ec == std::errc::connection_refused);
    /* The set-up refusals of 0.5 with a portable condition. */
    CHECK(std::error_code(LW_ENOPERM, leasewheel::category()) == std::errc::permission_denied);
    CHECK(std::error_code(LW_EPROTO, leasewheel::category()) == std::errc::protocol_error);
    CHECK(!m.try_lock(ec) && ec == LW_ECONNREFUSED);
    CHECK(!m.try_lock_for(100ms, ec) && ec == LW_ECONNREFUSED);
    CHECK(!m.try_lock_until(clk::now() + 100ms, ec) && ec == LW_ECONNREFUSED);
    CHECK(!m.is_locked(ec) && ec == LW_ECONNREFUSED);

    int thrown = 0;
    auto expect_refused = [&](auto &&call) {
        try {
            call();
        } catch (const std::system_error &e) {
            if (e.code() == LW_ECONNREFUSED &&
                std::strstr(e.what(), lw_strerror(LW_ECONNREFUSED)) != nullptr)
                thrown++;
            else
                std::fprintf(stderr, "unexpected system_error: %s\n", e.what());
        }
    };
    expect_refused([&] { m.lock(); });
    expect_refused([&] { (void)m.try_lock(); });
    expect_refused([&] { (void)m.try_lock_for(50ms); });
    expect_refused([&] { (void)m.try_lock_until(std::chrono::system_clock::now() + 50ms); });
    expect_refused([&] { std::lock_guard<leasewheel::mutex> g(m); });
    CHECK(thrown == 5);

    /* A config the library refuses: thrown from the constructor, or in ec
     * with an empty client. */
    leasewheel::options bad;
    bad.port = 70000;
    try {
        leasewheel::client x(bad);
        CHECK(!"client with port 70000 constructed");
    } catch (const std::system_error &e) {
        CHECK(e.code() == LW_ERANGE);
    }
    leasewheel::client y(bad, ec);
    CHECK(ec == LW_ERANGE && !y);
    bad.port = 0;
    bad.tick = -1ms;
    leasewheel::client z(bad, ec);
    CHECK(ec == LW_EINVAL && ec == std::errc::invalid_argument && !z);
    leasewheel::mutex orphan(z, "hpp:orphan", ec);
    CHECK(ec == LW_EINVAL);
    orphan.lock(ec);
    CHECK(ec == LW_EINVAL);
    /* Every code has its message through the category. */
    for (int e = LW_EINVAL; e >= LW_EREPLICAS; e--)
        CHECK(std::error_code(e, leasewheel::category()).message() == lw_strerror(e));
}

/* A failed unlock() throws nothing: its handler hears of it, on the
 * calling thread, and take_unlock_error() has it. */
static void unlock_failures(const redis_server *srv)
{
    leasewheel::client c(opts_for(srv->port));
    leasewheel::mutex m(c, "hpp:unlock");
    std::error_code seen;
    int calls = 0;
    std::thread::id on;

    m.set_unlock_error_handler([&](const leasewheel::mutex &who, std::error_code ec) {
        CHECK(&who == &m);
        seen = ec;
        calls++;
        on = std::this_thread::get_id();
    });
    m.unlock(); /* not held */
    CHECK(calls == 1 && seen == LW_ENOTOWNER && on == std::this_thread::get_id());
    CHECK(seen == std::errc::operation_not_permitted);
    CHECK(m.take_unlock_error() == LW_ENOTOWNER);
    CHECK(!m.take_unlock_error());

    /* Held, then the key deleted behind its back. */
    m.lock();
    redisReply *r = redis_server_command(srv, "DEL %s", "hpp:unlock");
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    if (r)
        freeReplyObject(r);
    m.unlock();
    CHECK(calls == 2 && seen == LW_ENOTOWNER);

    std::error_code ec;
    m.unlock(ec); /* to ec, not to the handler */
    CHECK(ec == LW_ENOTOWNER && calls == 2);
    m.set_unlock_error_handler(nullptr);
    m.unlock();
    CHECK(calls == 2 && m.take_unlock_error() == LW_ENOTOWNER);
}

/* A 300 ms watchdog lease on a 10 ms tick: the key deleted behind the
 * watchdog's back is reported through the std::function, on the engine
 * thread, once; the holder's unlock then fails to its handler. */
static void lost(const redis_server *srv)
{
    struct seen {
        std::atomic<int> calls{0}, reason{0};
        std::atomic<std::uint64_t> owner{0};
        std::atomic<bool> name_ok{false}, on_engine{false}, edeadlk{false};
        std::atomic<leasewheel::mutex *> m{nullptr};
    } s;
    const std::thread::id main_id = std::this_thread::get_id();
    leasewheel::options o = opts_for(srv->port);
    o.watchdog_timeout = 300ms;
    o.tick = 10ms;
    o.on_lost = [&](std::string_view name, std::uint64_t owner, int reason) {
        std::error_code ec;
        s.name_ok = name == "hpp:lost";
        s.owner = owner;
        s.reason = reason;
        s.on_engine = std::this_thread::get_id() != main_id;
        if (leasewheel::mutex *m = s.m.load()) /* blocking calls refuse here */
            s.edeadlk = !m->is_locked(ec) && ec == LW_EDEADLK;
        s.calls++;
    };
    leasewheel::client first(o);
    leasewheel::client c = std::move(first); /* on_lost moves with it */
    CHECK(!first && c);
    leasewheel::mutex m(c, "hpp:lost");
    std::error_code unlock_ec;
    m.set_unlock_error_handler(
        [&](const leasewheel::mutex &, std::error_code ec) { unlock_ec = ec; });
    s.m = &m;

    m.lock();
    std::this_thread::sleep_for(400ms); /* renewed past its first lease */
    CHECK(m.is_held() && s.calls == 0);
    redisReply *r = redis_server_command(srv, "DEL %s", "hpp:lost");
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    if (r)
        freeReplyObject(r);
    auto t0 = clk::now();
    while (s.calls == 0 && ms_since(t0) < 3000)
        std::this_thread::sleep_for(5ms);
    std::printf("on_lost after %lld ms\n", ms_since(t0));
    CHECK(s.calls == 1 && s.name_ok && s.reason == LW_LOST_NOT_OWNER);
    CHECK(s.owner == lw_owner_self() && s.on_engine && s.edeadlk);
    CHECK(!m.is_held());
    m.unlock();
    CHECK(unlock_ec == LW_ENOTOWNER);
    CHECK(c.stats().lost_not_owner == 1);
    std::this_thread::sleep_for(100ms);
    CHECK(s.calls == 1);
    s.m = nullptr;
}

/* One DEL, EXISTS, ...'s integer reply; -1 for anything else. */
static long long redis_int(const redis_server *srv, const char *fmt, const char *key)
{
    redisReply *r = redis_server_command(srv, fmt, key);
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    if (r)
        freeReplyObject(r);
    return n;
}

/* Wait until cond() (at most ms); whether it came true. */
template <class Cond>
static bool wait_for(Cond cond, long long ms)
{
    auto t0 = clk::now();
    while (!cond() && ms_since(t0) < ms)
        std::this_thread::sleep_for(5ms);
    return cond();
}

/*
 * A 2 s watchdog lease on a 20 ms tick, through a proxy: the link goes
 * silent (nothing closed), and on_risk says the lock is at risk, with at
 * most half its lease left; the link back at once, and on_risk says it is
 * safe again; silent again for good, at risk again, then lost (expired).
 * In that order, each once, on the engine thread.
 */
static void risk(const redis_server *srv)
{
    struct event {
        char what; /* 'r' at risk, 's' safe, 'l' lost */
        long long left_ms;
        int reason;
    };
    std::mutex mu;
    std::vector<event> seen;
    std::atomic<int> risks{0}, lost{0};
    std::atomic<bool> names_ok{true}, owners_ok{true}, on_engine{true};
    const std::thread::id main_id = std::this_thread::get_id();
    const std::uint64_t me = lw_owner_self();
    proxy *px = proxy_start(srv->port);

    CHECK(px != nullptr);
    if (!px)
        return;
    leasewheel::options o = opts_for(proxy_port(px));
    o.watchdog_timeout = 2000ms;
    o.tick = 20ms;
    o.on_risk = [&](std::string_view name, std::uint64_t owner, bool at_risk,
                    std::chrono::milliseconds left) {
        std::lock_guard<std::mutex> g(mu);
        names_ok = names_ok && name == "hpp:risk";
        owners_ok = owners_ok && owner == me;
        on_engine = on_engine && std::this_thread::get_id() != main_id;
        seen.push_back({at_risk ? 'r' : 's', static_cast<long long>(left.count()), 0});
        risks++;
    };
    o.on_lost = [&](std::string_view, std::uint64_t, int reason) {
        std::lock_guard<std::mutex> g(mu);
        seen.push_back({'l', 0, reason});
        lost++;
    };
    {
        leasewheel::client c(o);
        leasewheel::mutex m(c, "hpp:risk");

        m.lock();
        std::this_thread::sleep_for(800ms); /* renewed once at least */
        CHECK(proxy_hold(px, 1) == 0);
        auto t0 = clk::now();
        CHECK(wait_for([&] { return risks >= 1; }, 3000));
        std::printf("at risk after %lld ms of silence\n", ms_since(t0));
        CHECK(proxy_hold(px, 0) == 0);
        CHECK(wait_for([&] { return risks >= 2; }, 3000));
        CHECK(lost == 0 && m.is_held());
        CHECK(c.stats().went_at_risk == 1 && c.stats().recovered == 1);

        CHECK(proxy_hold(px, 1) == 0);
        t0 = clk::now();
        CHECK(wait_for([&] { return lost >= 1; }, 5000));
        std::printf("lost after %lld ms of silence\n", ms_since(t0));
        CHECK(proxy_hold(px, 0) == 0);
        CHECK(!m.is_held());
        std::lock_guard<std::mutex> g(mu);
        CHECK(seen.size() == 4);
        if (seen.size() == 4) {
            CHECK(seen[0].what == 'r' && seen[1].what == 's' && seen[2].what == 'r' &&
                  seen[3].what == 'l');
            CHECK(seen[0].left_ms > 0 && seen[0].left_ms <= 1000);
            CHECK(seen[2].left_ms > 0 && seen[2].left_ms <= 1000);
            CHECK(seen[3].reason == LW_LOST_EXPIRED || seen[3].reason == LW_LOST_ERRORS);
        }
        CHECK(names_ok && owners_ok && on_engine);
        m.set_unlock_error_handler(nullptr);
        m.unlock();
    }
    proxy_stop(px);
}

/*
 * The hold cap: a mutex's own (set_max_hold, on a client built from an
 * lw_client_config with on_lost and on_risk) and the client's
 * (options::max_hold).  The lock is given up as held too long, not before
 * the cap, and its key is left in Redis to the end of its lease.
 */
static void max_hold(const redis_server *srv)
{
    std::atomic<int> calls{0}, reason{0};
    auto on_lost = [&](std::string_view, std::uint64_t, int why) {
        reason = why;
        calls++;
    };
    lw_client_config cfg;
    lw_client_config_init(&cfg);
    cfg.port = srv->port;
    cfg.tick_ms = 10;
    leasewheel::client c(cfg, on_lost, [](std::string_view, std::uint64_t, bool, std::chrono::milliseconds) {});
    leasewheel::mutex m(c, "hpp:capped");
    std::error_code ec;

    m.set_max_hold(-1ms, ec);
    CHECK(ec == LW_EINVAL);
    m.set_max_hold(std::chrono::milliseconds(LW_MAX_LEASE_MS * 1000ll + 1), ec);
    CHECK(ec == LW_ERANGE);
    try {
        m.set_max_hold(-5ms);
        CHECK(!"set_max_hold(-5ms) did not throw");
    } catch (const std::system_error &e) {
        CHECK(e.code() == LW_EINVAL);
    }
    m.set_max_hold(300ms);
    auto t0 = clk::now();
    m.lock();
    CHECK(wait_for([&] { return calls >= 1; }, 3000));
    long long took = ms_since(t0);
    std::printf("held too long after %lld ms\n", took);
    CHECK(took >= 290 && calls == 1 && reason == LW_LOST_HELD_TOO_LONG);
    CHECK(redis_int(srv, "EXISTS %s", "hpp:capped") == 1);
    long long ttl = redis_int(srv, "PTTL %s", "hpp:capped");
    CHECK(ttl > 20000 && ttl <= 30000); /* the lease it had, not renewed */
    CHECK(c.stats().lost_held_too_long == 1 && c.stats().locks_held == 0);
    m.unlock(ec); /* the field left in Redis: released early, or not held */
    /* 0: the client's again (none): held past 300 ms. */
    m.set_max_hold(0ms);
    leasewheel::mutex free_one(c, "hpp:capped:0");
    free_one.set_max_hold(0ms);
    free_one.lock();
    std::this_thread::sleep_for(400ms);
    CHECK(free_one.is_held() && calls == 1);
    free_one.unlock();

    /* The client's cap, from the options; a negative one is refused. */
    leasewheel::options o = opts_for(srv->port);
    o.tick = 10ms;
    o.max_hold = 200ms;
    o.on_lost = on_lost;
    leasewheel::client capped(o);
    leasewheel::mutex mc(capped, "hpp:capped:client");
    mc.lock();
    CHECK(wait_for([&] { return calls >= 2; }, 3000));
    CHECK(calls == 2 && reason == LW_LOST_HELD_TOO_LONG);
    CHECK(capped.stats().lost_held_too_long == 1);
    mc.unlock(ec);
    o.max_hold = -1ms;
    leasewheel::client bad(o, ec);
    CHECK(ec == LW_EINVAL && !bad);
}

/*
 * The log hook: a killed connection (CLIENT KILL) is a warn line, its
 * return an info line, as std::string_views; a client logging from
 * LW_LOG_WARN only does not get the info line.
 */
/* leasewheel::shared_mutex with std::shared_lock and std::unique_lock:
 * readers of two clients share it, a writer waits for them and is alone,
 * the writer may read (a downgrade), a reader may not write (LW_EDEADLK). */
static void shared_mutex_locks(int port)
{
    leasewheel::client a(opts_for(port)), b(opts_for(port));
    leasewheel::shared_mutex ma(a, "hpp:rw"), mb(b, "hpp:rw");

    {
        std::shared_lock<leasewheel::shared_mutex> ra(ma);
        std::shared_lock<leasewheel::shared_mutex> rb(mb, 200ms);
        CHECK(ra.owns_lock() && rb.owns_lock());
        rb.unlock();
        std::unique_lock<leasewheel::shared_mutex> w(mb, 200ms);
        CHECK(!w.owns_lock()); /* a reader holds it */
    }
    {
        ma.set_fenced(true);
        std::unique_lock<leasewheel::shared_mutex> w(ma);
        CHECK(ma.token() > 0);
        CHECK(!mb.try_lock_shared());
        std::shared_lock<leasewheel::shared_mutex> down(ma, std::try_to_lock);
        CHECK(down.owns_lock()); /* the writer reads too */
    }
    CHECK(mb.try_lock());
    mb.unlock();
    {
        std::shared_lock<leasewheel::shared_mutex> r(ma);
        std::error_code ec;
        ma.lock(ec);
        CHECK(ec == LW_EDEADLK);
        CHECK(!ma.try_lock());
    }
    CHECK(!ma.take_unlock_error());
}

/* leasewheel::fair_mutex: a TimedLockable as a mutex, in one queue: the
 * second client's waiter gets it when the first lets go, before a third
 * that came later, however they race. */
static long long fair_queue_len(const redis_server *srv)
{
    redisReply *r = redis_server_command(srv, "LLEN %s", "redisson_lock_queue:{hpp:fair}");
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    freeReplyObject(r);
    return n;
}

static void fair_mutex_in_turn(const redis_server *srv)
{
    int port = srv->port;
    leasewheel::client a(opts_for(port)), b(opts_for(port)), c(opts_for(port));
    leasewheel::fair_mutex ma(a, "hpp:fair"), mb(b, "hpp:fair"), mc(c, "hpp:fair");
    std::atomic<int> order{0}, b_at{0}, c_at{0};

    ma.set_fenced(true);
    std::unique_lock<leasewheel::fair_mutex> held(ma);
    CHECK(ma.token() > 0);
    CHECK(!mb.try_lock()); /* held: a try does not queue */
    std::thread tb([&] {
        std::unique_lock<leasewheel::fair_mutex> g(mb, 5s);
        b_at = ++order;
    });
    CHECK(wait_for([&] { return fair_queue_len(srv) == 1; }, 3000));
    std::thread tc([&] {
        std::unique_lock<leasewheel::fair_mutex> g(mc, 5s);
        c_at = ++order;
    });
    CHECK(wait_for([&] { return fair_queue_len(srv) == 2; }, 3000));
    held.unlock();
    tb.join();
    tc.join();
    CHECK(b_at == 1 && c_at == 2);
    CHECK(!ma.take_unlock_error() && !mb.take_unlock_error() && !mc.take_unlock_error());
}

/* leasewheel::multi_lock: a set for std::lock_guard and std::unique_lock,
 * all or none: one of its names held elsewhere refuses it whole; two
 * multi_locks over the same names in opposite orders exclude each other
 * and never wait for each other. */
static void multi_lock_sets(int port)
{
    leasewheel::client a(opts_for(port)), b(opts_for(port));
    leasewheel::multi_lock ab(a, {"hpp:acct:1", "hpp:acct:2"}, true); /* fenced */
    leasewheel::multi_lock ba(b, {"hpp:acct:2", "hpp:acct:1"});
    leasewheel::mutex two(b, "hpp:acct:2");
    std::atomic<int> inside{0}, overlaps{0};

    {
        std::lock_guard<leasewheel::mutex> g(two);
        CHECK(!ab.try_lock()); /* one name held: none taken */
        CHECK(!leasewheel::mutex(a, "hpp:acct:1").is_locked());
    }
    {
        std::unique_lock<leasewheel::multi_lock> g(ab, 1s);
        CHECK(g.owns_lock());
        CHECK(ab.tokens().size() == 2 && ab.tokens()[0] > 0 && ab.tokens()[1] > 0);
        CHECK(!ba.try_lock());
    }
    auto loop = [&](leasewheel::multi_lock &m) {
        for (int i = 0; i < 100; i++) {
            std::unique_lock<leasewheel::multi_lock> g(m, 5s);
            CHECK(g.owns_lock());
            if (inside.fetch_add(1) != 0)
                overlaps++;
            inside.fetch_sub(1);
        }
    };
    std::thread t1([&] { loop(ab); }), t2([&] { loop(ba); });
    t1.join();
    t2.join();
    CHECK(overlaps == 0);
    CHECK(!ab.take_unlock_error() && !ba.take_unlock_error());
}

/* leasewheel::election: one leader of two candidates, its term and value
 * read by the other, the belief, proclaim and resign, set_queued. */
static void election_terms(int port)
{
    leasewheel::client a(opts_for(port)), b(opts_for(port));
    leasewheel::election ea(a, "hpp:leader"), eb(b, "hpp:leader");
    std::error_code ec;

    std::uint64_t term = ea.campaign("a");
    CHECK(term > 0 && ea.term() == term && ea.is_leader());
    CHECK(eb.campaign("b", 0s, ec) == 0 && !ec); /* a leads */
    CHECK(!eb.proclaim("b", ec) && !ec);
    CHECK(ea.proclaim("a2", ec) && !ec);
    lw_leader l = eb.leader(ec);
    CHECK(!ec && l.held && l.term == term && std::string(l.value) == "a2");
    CHECK(ea.resign(ec) && !ec && !ea.is_leader());
    CHECK(eb.campaign("b", 1s, ec) == term + 1 && !ec);
    CHECK(eb.resign(ec));
    /* Out of the queue: only before a campaign. */
    leasewheel::election ec2(b, "hpp:leader");
    ec2.set_queued(false, ec);
    CHECK(!ec);
    eb.set_queued(false, ec);
    CHECK(ec.value() == LW_EBUSY);
}

static void log_lines(const redis_server *srv)
{
    struct lines {
        std::mutex mu;
        std::vector<std::pair<int, std::string>> v;
        bool has(int level, const char *text)
        {
            std::lock_guard<std::mutex> g(mu);
            for (const auto &l : v)
                if (l.first == level && l.second.find(text) != std::string::npos)
                    return true;
            return false;
        }
    } all, warn;
    leasewheel::options o = opts_for(srv->port);
    o.log = [&](int level, std::string_view message) {
        std::lock_guard<std::mutex> g(all.mu);
        all.v.emplace_back(level, std::string(message));
    };
    leasewheel::client c(o);
    o.log = [&](int level, std::string_view message) {
        std::lock_guard<std::mutex> g(warn.mu);
        warn.v.emplace_back(level, std::string(message));
    };
    o.log_level = LW_LOG_WARN;
    leasewheel::client w(o);
    leasewheel::mutex m(c, "hpp:log"), mw(w, "hpp:log:warn");

    CHECK(!m.is_locked() && !mw.is_locked()); /* both connected */
    redisReply *r = redis_server_command(srv, "CLIENT KILL TYPE normal");
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer >= 2);
    if (r)
        freeReplyObject(r);
    CHECK(wait_for([&] { return all.has(LW_LOG_INFO, "connection restored"); }, 5000));
    CHECK(all.has(LW_LOG_WARN, "LW_ECONNLOST"));
    CHECK(wait_for([&] { return warn.has(LW_LOG_WARN, "LW_ECONNLOST"); }, 5000));
    std::this_thread::sleep_for(300ms);
    CHECK(!warn.has(LW_LOG_INFO, "connection restored"));
    CHECK(!m.is_locked() && !mw.is_locked()); /* both back */
}

/* A semaphore of two permits: RAII permits that release on destruction,
 * move to another thread and are released there; timed tries that give
 * up with an empty permit, and one that a release ends early. */
static void semaphore_permits(int port)
{
    leasewheel::client c(opts_for(port));
    leasewheel::semaphore s(c, "hpp:sem");
    std::error_code ec;

    CHECK(!s.try_acquire_for(10ms, 10s, ec) && ec == LW_ENOSEM); /* not created */
    CHECK(s.try_set_permits(2) && !s.try_set_permits(5));
    {
        leasewheel::permit a = s.acquire(10s);
        leasewheel::permit b = s.try_acquire_for(100ms, 10s);
        CHECK(a && b && a.hex().size() == LW_PERMIT_HEX_LEN && a.hex() != b.hex());
        CHECK(s.available() == 0);
        leasewheel::permit none = s.try_acquire_for(50ms, 10s);
        CHECK(!none && none.hex().empty());
        none = std::move(b);
        CHECK(none && !b);
        std::thread t([p = std::move(none)]() mutable { p.release(); });
        t.join();
        CHECK(s.available() == 1);
    }
    CHECK(s.available() == 2); /* a's destructor released it */
    leasewheel::permit x = s.acquire(10s), y = s.acquire(10s);
    auto t0 = clk::now();
    std::thread later([&y] {
        std::this_thread::sleep_for(200ms);
        y.release();
    });
    leasewheel::permit z = s.try_acquire_until(clk::now() + 10s, 10s);
    later.join();
    CHECK(z && ms_since(t0) < 9000);
    std::error_code rel;
    leasewheel::permit w = s.try_acquire_until(std::chrono::system_clock::now() + 50ms, 10s);
    CHECK(!w);
    z.release(rel);
    CHECK(!rel && !z);
    z.release(rel); /* none: nothing to do */
    CHECK(!rel);
    {
        leasewheel::permit renewed = s.acquire(); /* lease 0: the watchdog's */
        CHECK(renewed && s.available() == 0); /* x holds the other */
    }
    CHECK(s.available() == 1);
    static_assert(!std::is_copy_constructible_v<leasewheel::permit> &&
                  std::is_nothrow_move_constructible_v<leasewheel::permit>);
}

/*
 * on_lease_lost says the kind: a permit and a read lock held with the
 * watchdog's lease (300 ms on a 10 ms tick), their keys deleted behind
 * its back, each reported once with its kind, name and owner, the permit
 * with its whole id; on_lost as well.  Then the semaphore's other counts
 * (add_permits, acquired) and options::permit_clock_skew, 0 included.
 */
static void lease_kinds(const redis_server *srv)
{
    struct report {
        lw_lease_kind kind;
        std::string name;
        std::uint64_t owner;
        bool permit_ok; /* a permit's whole id; none for a lock */
        int reason;
    };
    std::mutex mu;
    std::vector<report> seen;
    lw_permit held{}; /* under mu: read on the engine thread */
    std::atomic<int> old_lost{0};
    leasewheel::options o = opts_for(srv->port);
    o.watchdog_timeout = 300ms;
    o.tick = 10ms;
    o.permit_clock_skew = 20ms;
    o.on_lost = [&](std::string_view, std::uint64_t, int) { old_lost++; };
    o.on_lease_lost = [&](const leasewheel::lease &l, int reason) {
        std::lock_guard<std::mutex> g(mu);
        bool permit_ok = l.kind == LW_LEASE_PERMIT
                             ? l.permit && std::memcmp(l.permit, &held, sizeof held) == 0
                             : l.permit == nullptr;
        seen.push_back({l.kind, std::string(l.name), l.owner, permit_ok, reason});
    };
    leasewheel::client c(o);
    leasewheel::semaphore s(c, "hpp:kinds:sem");
    leasewheel::shared_mutex rw(c, "hpp:kinds:rw");

    CHECK(s.try_set_permits(1));
    leasewheel::permit p = s.acquire(); /* lease 0: the watchdog's */
    {
        std::lock_guard<std::mutex> g(mu);
        held = p.id();
    }
    rw.lock_shared();
    CHECK(s.acquired() == 1 && s.add_permits(2) == 2 && s.available() == 2);
    std::this_thread::sleep_for(150ms); /* renewed */
    CHECK(redis_int(srv, "DEL %s", "{hpp:kinds:sem}:timeout") == 1);
    CHECK(redis_int(srv, "DEL %s", "hpp:kinds:rw") == 1);
    CHECK(wait_for(
        [&] {
            std::lock_guard<std::mutex> g(mu);
            return seen.size() >= 2;
        },
        3000));
    std::this_thread::sleep_for(50ms); /* nothing more comes */
    {
        std::lock_guard<std::mutex> g(mu);
        CHECK(seen.size() == 2);
        for (const report &r : seen) {
            bool permit = r.kind == LW_LEASE_PERMIT;
            CHECK(permit || r.kind == LW_LEASE_READ);
            CHECK(r.name == (permit ? "hpp:kinds:sem" : "hpp:kinds:rw"));
            CHECK(r.owner == (permit ? lw_permit_owner(&held) : lw_owner_self()));
            CHECK(r.permit_ok && r.reason == LW_LOST_NOT_OWNER);
        }
        CHECK(seen.size() == 2 && seen[0].kind != seen[1].kind);
    }
    CHECK(old_lost == 2);
    CHECK(s.acquired() == 0);
    rw.unlock_shared(); /* lost: not held */
    CHECK(rw.take_unlock_error() == LW_ENOTOWNER);

    std::error_code ec;
    leasewheel::options bad = opts_for(srv->port);
    bad.permit_clock_skew = -1ms;
    leasewheel::client none(bad, ec);
    CHECK(ec == LW_EINVAL && !none);
    bad.permit_clock_skew = 0ms; /* no allowance: allowed */
    leasewheel::client zero(bad, ec);
    CHECK(!ec && zero);
}

int main()
{
    redis_server srv;

    std::printf("test_hpp: C++ %ld\n", static_cast<long>(__cplusplus));
    errors();
    if (redis_server_start(&srv, nullptr) != 0) {
        std::fprintf(stderr, "redis-server did not start\n");
        return 1;
    }
    try {
        guard_and_tokens(srv.port);
        unique_lock_timeouts(srv.port);
        scoped_lock_two(srv.port);
        unlock_failures(&srv);
        lost(&srv);
        risk(&srv);
        max_hold(&srv);
        shared_mutex_locks(srv.port);
        fair_mutex_in_turn(&srv);
        multi_lock_sets(srv.port);
        election_terms(srv.port);
        log_lines(&srv);
        semaphore_permits(srv.port);
        lease_kinds(&srv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "unexpected exception: %s\n", e.what());
        failures++;
    }
    redis_server_stop(&srv);
    std::printf("test_hpp: %s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
