/*
 * leasewheel.h - the library's public header.
 *
 * leasewheel holds Redis distributed locks and renews their leases on a
 * hashed timing wheel.  This header gathers the public parts:
 *   <leasewheel/lock.h>   the client and its locks
 *   <leasewheel/multi.h>  several locks held at once, or none
 *   <leasewheel/semaphore.h> semaphores whose permits expire
 *   <leasewheel/tls.h>    TLS settings for its connections
 *   <leasewheel/error.h>  error codes and lw_strerror()
 *   <leasewheel/wheel.h>  the standalone timing wheel
 *   <leasewheel/version.h> LW_VERSION_* and lw_version()
 */
#ifndef LEASEWHEEL_H
#define LEASEWHEEL_H

#include <leasewheel/election.h>
#include <leasewheel/error.h>
#include <leasewheel/lock.h>
#include <leasewheel/multi.h>
#include <leasewheel/semaphore.h>
#include <leasewheel/version.h>
#include <leasewheel/wheel.h>

#endif
