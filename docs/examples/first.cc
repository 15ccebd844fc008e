/*
 * docs/examples/first.cc - the README's first C++ program: the same lock
 * as first.c, through <leasewheel.hpp> and the standard's lock types.
 *
 * Usage: first_cxx [port]   (Redis at 127.0.0.1:port, default 6379)
 * Build: c++ -std=c++17 -o first_cxx first.cc $(pkg-config --cflags --libs leasewheel)
 */
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <system_error>

#include <leasewheel.hpp>

int main(int argc, char **argv)
try {
    leasewheel::options opts; /* empty or 0: the C defaults */
    if (argc > 1)
        opts.port = std::atoi(argv[1]);
    opts.on_lost = [](std::string_view name, std::uint64_t, int reason) {
        /* on the engine thread: stop the work `name` protected */
        std::cerr << "lost " << name << ": " << lw_lost_reason_name(reason) << "\n";
    };
    leasewheel::client client(opts);
    leasewheel::mutex orders(client, "orders:42");
    orders.set_fenced(true); /* draw fencing tokens (RFencedLock) */

    if (std::unique_lock<leasewheel::mutex> hold(orders, std::chrono::seconds(5)); hold) {
        std::cout << "holding orders:42, fencing token " << orders.token() << std::endl;
        /* ... the work; hold's destructor unlocks ... */
    } else {
        std::cerr << "orders:42 is busy\n";
        return 1;
    }
    std::cout << "released orders:42" << std::endl;
    return 0;
} catch (const std::system_error &e) { /* LW_ECONNREFUSED, ...: e.code().value() */
    std::cerr << e.what() << "\n"; /* the call, then the code's message */
    return 1;
}
