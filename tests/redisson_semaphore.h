/*
 * tests/redisson_semaphore.h - Redisson's RPermitExpirableSemaphore
 * scripts (redisson 4.7.0, RedissonPermitExpirableSemaphore.java),
 * verbatim: the Java string literals joined as Java joins them.  Each
 * with the SHA1 SCRIPT LOAD must answer for it, which the tests check
 * before they use it, so a changed byte cannot pass unseen.
 *
 * KEYS and ARGV, as Redisson passes them:
 *   TRY_ACQUIRE    KEYS name, timeout, channel; ARGV n, expiry, now,
 *                  922337203685477, publish, ids...  "OK", ":<score>", nil
 *   RELEASE        KEYS name, channel, timeout; ARGV id, 1, now, publish
 *   RELEASE_MANY   (not used: Redisson 4.7's list release)
 *   AVAILABLE      KEYS name, timeout, channel; ARGV now, publish
 *   UPDATE_LEASE   KEYS name, timeout, channel; ARGV id, expiry, now, publish
 *   TRY_SET, ADD   KEYS name, channel; ARGV n, publish
 *   SET            KEYS name, channel, timeout; ARGV n, publish
 *   GET_LEASE_TIME KEYS name, timeout, channel; ARGV id, 922337203685477,
 *                  now, publish: -1 never, 0 unknown, else ms left
 */
#ifndef LW_TESTS_REDISSON_SEMAPHORE_H
#define LW_TESTS_REDISSON_SEMAPHORE_H

#define RS_TRY_ACQUIRE_SHA "992c96b09a3d8ea0b37f5dc12e5347a44d93909d"
#define RS_TRY_ACQUIRE                                                                 \
    "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, " \
    "ARGV[1]); if #expiredIds > 0 then redis.call('zrem', KEYS[2], "                   \
    "unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); "  \
    "if tonumber(value) > 0 then redis.call(ARGV[5], KEYS[3], value); end;end; local " \
    "value = redis.call('get', KEYS[1]); if (value ~= false and tonumber(value) >= "   \
    "tonumber(ARGV[1])) then redis.call('decrby', KEYS[1], ARGV[1]); for i = 6, "      \
    "#ARGV, 1 do redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]); end; local ttl = "     \
    "redis.call('pttl', KEYS[1]); if ttl > 0 then redis.call('pexpire', KEYS[2], "     \
    "ttl); end; return 'OK'; end; local v = redis.call('zrange', KEYS[2], 0, 0, "      \
    "'WITHSCORES'); if v[1] ~= nil and v[2] ~= ARGV[4] then return ':' .. "            \
    "tostring(v[2]); end return nil;"

#define RS_RELEASE_SHA "4ce079451bee2993ce00c8a4e205b536c6ccad67"
#define RS_RELEASE                                                                     \
    "local expire = redis.call('zscore', KEYS[3], ARGV[1]);local removed = "           \
    "redis.call('zrem', KEYS[3], ARGV[1]);if tonumber(removed) ~= 1 then return "      \
    "0;end;local value = redis.call('incrby', KEYS[1], ARGV[2]); redis.call(ARGV[4], " \
    "KEYS[2], value); if tonumber(expire) <= tonumber(ARGV[3]) then return "           \
    "0;end;return 1;"

#define RS_AVAILABLE_SHA "26b3972b2c9e617556282f404cb79709d746a713"
#define RS_AVAILABLE                                                                   \
    "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, " \
    "-1); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); "   \
    "local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0" \
    " then redis.call(ARGV[2], KEYS[3], value); end;return value; end; local ret = "   \
    "redis.call('get', KEYS[1]); return ret == false and 0 or ret;"

#define RS_UPDATE_LEASE_SHA "2298b02cc67a89f2a638e47503db3675c73d77f5"
#define RS_UPDATE_LEASE                                                                \
    "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, " \
    "-1); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); "   \
    "local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0" \
    " then redis.call(ARGV[4], KEYS[3], value); end;end; local value = "               \
    "redis.call('zscore', KEYS[2], ARGV[1]); if (value ~= false) then "                \
    "redis.call('zadd', KEYS[2], ARGV[2], ARGV[1]); return 1;end;return 0;"

#define RS_TRY_SET_SHA "241ce4e87e652b4f9b39d33cbcd7df9ee8ed906c"
#define RS_TRY_SET                                                                 \
    "local value = redis.call('get', KEYS[1]); if (value == false) then "          \
    "redis.call('set', KEYS[1], ARGV[1]); redis.call(ARGV[2], KEYS[2], ARGV[1]); " \
    "return 1;end;return 0;"

#define RS_ADD_SHA "ec6fb1cd5f66817424e8fe70fee7929391b7c6f0"
#define RS_ADD                                                                    \
    "local value = redis.call('get', KEYS[1]); if (value == false) then value = " \
    "0;end;redis.call('set', KEYS[1], tonumber(value) + tonumber(ARGV[1])); if "  \
    "tonumber(ARGV[1]) > 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]); end;"

#define RS_SET_SHA "494d8561fee0cdb033f6c28d74c052c52189a578"
#define RS_SET                                                                      \
    "local available = redis.call('get', KEYS[1]); if (available == false) then "   \
    "redis.call('set', KEYS[1], ARGV[1]); redis.call(ARGV[2], KEYS[2], ARGV[1]); "  \
    "return;end;local acquired = redis.call('zcount', KEYS[3], 0, '+inf'); local "  \
    "maximum = (acquired == false and 0 or acquired) + tonumber(available); if "    \
    "(maximum == tonumber(ARGV[1])) then return;end;redis.call('incrby', KEYS[1], " \
    "tonumber(ARGV[1]) - maximum); redis.call(ARGV[2], KEYS[2], ARGV[1]);"

#define RS_GET_LEASE_TIME_SHA "8be95cb5221cc7ee883cacb8859a8b32ef501a0e"
#define RS_GET_LEASE_TIME                                                              \
    "local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, " \
    "-1); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); "   \
    "local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0" \
    " then redis.call(ARGV[4], KEYS[3], value); end;end; local value = "               \
    "redis.call('zscore', KEYS[2], ARGV[1]); if (value ~= false) then return "         \
    "tonumber(value) == tonumber(ARGV[2]) and -1 or tonumber(value) - "                \
    "tonumber(ARGV[3]);end;return 0;"

#endif
