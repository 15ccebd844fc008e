/*
 * docs/examples/cxx_server.cc - a threaded C++ server whose requests take
 * a leasewheel::mutex per account.
 *
 * Worker threads serve requests ("add 1 to account N"); each takes the
 * account's lock with try_lock_for() and a 2 s wait, as it would a
 * std::timed_mutex's, and a std::lock_guard releases it; a request whose
 * account stays busy is turned away.  The same lock excludes the other threads of this process and
 * every other process on the same Redis (another copy of this server, a
 * Java service using Redisson's RLock on the same name).  The owner is the
 * thread: the thread that locks unlocks, as with std::mutex.
 *
 * The balances live in this process, so the server also counts how many
 * threads are inside an account's critical section at once: with the lock
 * working that is never more than one.
 *
 * Usage: cxx_server [port [threads [requests]]]
 *   Redis at 127.0.0.1:port (default 6379); 4 threads each serving 50
 *   requests on 3 accounts.  Prints each account's balance and the most
 *   threads ever inside one at once; exits 0 when every request was
 *   served and that was 1.
 * Build: c++ -std=c++17 -o cxx_server cxx_server.cc $(pkg-config --cflags --libs leasewheel) -pthread
 */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <leasewheel.hpp>

namespace
{

struct account {
    account(leasewheel::client &c, const std::string &name)
        : lock(c, name)
    {
    }
    leasewheel::mutex lock;
    long balance = 0;           /* guarded by lock only */
    std::atomic<int> inside{0}; /* threads in the critical section now */
    std::atomic<int> most{0};   /* ... at most */
};

std::atomic<long> served{0}, busy{0}, failed{0};

void serve(account &a)
{
    std::error_code ec; /* the overload that reports, rather than throws */

    if (!a.lock.try_lock_for(std::chrono::seconds(2), ec)) {
        (ec ? failed : busy)++; /* ec: Redis unreachable, ...; else busy */
        if (ec)
            std::cerr << a.lock.name() << ": " << ec.message() << "\n";
        return;
    }
    std::lock_guard<leasewheel::mutex> hold(a.lock, std::adopt_lock);
    int now = ++a.inside;
    int most = a.most.load();
    while (now > most && !a.most.compare_exchange_weak(most, now)) {
    }
    a.balance++; /* the work the lock protects */
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    --a.inside;
    served++;
} /* hold unlocks */

} // namespace

int main(int argc, char **argv)
try {
    const int nthreads = argc > 2 ? std::atoi(argv[2]) : 4;
    const int requests = argc > 3 ? std::atoi(argv[3]) : 50;
    leasewheel::options opts;
    if (argc > 1)
        opts.port = std::atoi(argv[1]);
    opts.on_lost = [](std::string_view name, std::uint64_t, int reason) {
        std::cerr << "lost " << name << ": " << lw_lost_reason_name(reason) << "\n";
    };
    leasewheel::client client(opts);
    std::vector<std::unique_ptr<account>> accounts;
    for (int i = 0; i < 3; i++)
        accounts.push_back(std::make_unique<account>(client, "account:" + std::to_string(i)));

    std::vector<std::thread> workers;
    for (int t = 0; t < nthreads; t++)
        workers.emplace_back([&, t] {
            for (int r = 0; r < requests; r++)
                serve(*accounts[(t + r) % accounts.size()]);
        });
    for (auto &w : workers)
        w.join();

    int most = 0;
    for (auto &a : accounts) {
        std::cout << a->lock.name() << ": balance " << a->balance << ", at most "
                  << a->most.load() << " thread inside at once\n";
        most = std::max(most, a->most.load());
    }
    std::cout << "served " << served << " requests on " << nthreads << " threads, " << busy
              << " turned away busy, " << failed << " failed" << std::endl;
    return failed == 0 && most <= 1 && served + busy == long(nthreads) * requests ? 0 : 1;
} catch (const std::system_error &e) {
    std::cerr << e.what() << "\n"; /* the call, then the code's message */
    return 1;
}
