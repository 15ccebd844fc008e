/*
 * leasewheel.h - the library's public header.
 *
 * leasewheel holds Redis distributed locks and renews their leases on a
 * hashed timing wheel.  This header gathers the public parts:
 *   <leasewheel/lock.h>   the client and its locks
 *   <leasewheel/error.h>  error codes and lw_strerror()
 *   <leasewheel/wheel.h>  the standalone timing wheel
 */
#ifndef LEASEWHEEL_H
#define LEASEWHEEL_H

#include <leasewheel/error.h>
#include <leasewheel/lock.h>
#include <leasewheel/wheel.h>

#define LW_VERSION_MAJOR 0
#define LW_VERSION_MINOR 1
#define LW_VERSION_PATCH 0

#endif
