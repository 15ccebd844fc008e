/*
 * adapters/keyslot.c - which of a Redis Cluster's 16384 slots a key is in.
 *
 * The cluster specification's rule: CRC16 (the XMODEM variant: polynomial
 * 0x1021, initial value 0, no reflection) of the key, modulo 16384.  When
 * the key holds a '{' followed later by a '}' with at least one byte
 * between them, only those bytes (the hash tag) are hashed, so that keys
 * sharing a tag share a slot.  Only the first '{' counts, and the first
 * '}' after it.
 */
#include <string.h>

#include "engine.h"

/* Bit by bit: a slot is computed once per lock handle, not per call, so a
 * 512-byte table would buy nothing measurable. */
static uint16_t crc16_xmodem(const unsigned char *p, size_t len)
{
    uint16_t crc = 0;

    while (len--) {
        crc ^= (uint16_t)(*p++ << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

unsigned keyslot(const void *key, size_t len)
{
    const unsigned char *k = key;
    const unsigned char *open = memchr(k, '{', len);

    if (open) {
        size_t rest = len - (size_t)(open - k) - 1;
        const unsigned char *close = memchr(open + 1, '}', rest);

        if (close && close > open + 1)
            return crc16_xmodem(open + 1, (size_t)(close - open - 1)) % LW_CLUSTER_SLOTS;
    }
    return crc16_xmodem(k, len) % LW_CLUSTER_SLOTS;
}

void request_route_slot(struct request *req, unsigned slot)
{
    req->route = LW_ROUTE_SLOT;
    req->route_to = slot % LW_CLUSTER_SLOTS;
}

void request_route_node(struct request *req, unsigned node)
{
    req->route = LW_ROUTE_NODE;
    req->route_to = node;
}
