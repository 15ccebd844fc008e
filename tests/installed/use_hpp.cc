/*
 * use_hpp.cc - a C++17 program built against an installed leasewheel with
 * CMake's find_package(leasewheel) (tests/installed.sh, CMakeLists.txt):
 * <leasewheel.hpp>'s client and mutex in std::lock_guard and
 * std::unique_lock, fencing tokens (asked for), a timed try while another client
 * holds the name, an error through the category.  Usage: use_hpp PORT.
 */
#include <leasewheel.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <system_error>

#include "common.h"

int main(int argc, char **argv)
{
    using namespace std::chrono_literals;
    leasewheel::options o;
    std::uint64_t token = 0;

    CHECK(argc == 2);
    CHECK(std::strcmp(lw_version(), LW_VERSION_STRING) == 0);
    o.port = std::atoi(argv[1]);
    leasewheel::client a(o), b(o);
    leasewheel::mutex ma(a, "installed:hpp"), mb(b, "installed:hpp");
    ma.set_fenced(true); /* tokens are asked for (RFencedLock) */
    mb.set_fenced(true);
    {
        std::lock_guard<leasewheel::mutex> g(ma);
        token = ma.token();
        CHECK(token > 0 && ma.is_held());
        std::unique_lock<leasewheel::mutex> lk(mb, 50ms);
        CHECK(!lk.owns_lock());
    }
    {
        std::unique_lock<leasewheel::mutex> lk(mb, std::chrono::steady_clock::now() + 1s);
        CHECK(lk.owns_lock() && mb.token() > token);
    }
    CHECK(!ma.is_locked());
    std::error_code ec;
    ma.unlock(ec);
    CHECK(ec == LW_ENOTOWNER && ec.message() == lw_strerror(LW_ENOTOWNER));
    CHECK(std::strcmp(ec.category().name(), "leasewheel") == 0);
    std::printf("use_hpp (C++17, CMake): leasewheel %s, tokens %llu, %llu\n", lw_version(),
                static_cast<unsigned long long>(token),
                static_cast<unsigned long long>(mb.token()));
    return 0;
}
