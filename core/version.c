/* core/version.c - the version of the library running. */
#include <leasewheel/version.h>

const char *lw_version(void)
{
    return LW_VERSION_STRING;
}

unsigned lw_version_hex(void)
{
    return LW_VERSION_HEX;
}
