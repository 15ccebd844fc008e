/*
 * tests/renewals_before.h - the read-hold and permit renewal scripts as
 * they were before their cost was cut (leasewheel 0.3's core/scripts.c,
 * verbatim): per read hold HGET, a PEXPIRE per timeout key, PTTL and
 * PEXPIRE of the hash; per permit ZSCORE, the semaphore's reclaim and ZADD
 * XX, with an expiry and the publish command per permit.  test_kinds.c
 * runs them and today's scripts on the same states and checks that Redis
 * is left exactly as these left it, with the same answers and the same
 * messages.
 */
#ifndef LW_TESTS_RENEWALS_BEFORE_H
#define LW_TESTS_RENEWALS_BEFORE_H

/* clang-format off */
#define OLD_RENEW_PERMIT_FN                                                             \
    "local function renew_permit(name, timeout, id, expiry, publish, lease) "        \
    "  local now = tonumber(expiry) - tonumber(lease) "                              \
    "  local s = redis.pcall('zscore', timeout, id) "                                \
    "  if type(s) == 'table' then "                                                  \
    "    if string.find(s.err, 'WRONGTYPE', 1, true) then return 0 end "             \
    "    return -1 "                                                                 \
    "  end "                                                                         \
    "  local ids = redis.call('zrangebyscore', timeout, 0, now) "                    \
    "  if #ids > 0 then "                                                            \
    "    for i = 1, #ids, 1000 do "                                                  \
    "      redis.call('zrem', timeout, unpack(ids, i, math.min(i + 999, #ids))) "    \
    "    end "                                                                       \
    "    local value = redis.pcall('incrby', name, #ids) "                           \
    "    if type(value) == 'number' and value > 0 then "                             \
    "      local ch = name "                                                         \
    "      if not string.find(name, '{', 1, true) then ch = '{' .. name .. '}' end " \
    "      redis.call(publish, 'redisson_sc:' .. ch, value) "                        \
    "    end "                                                                       \
    "  end "                                                                         \
    "  if s and tonumber(s) > now then "                                             \
    "    redis.call('zadd', timeout, 'XX', expiry, id) "                             \
    "    return 1 "                                                                  \
    "  end "                                                                         \
    "  return 0 "                                                                    \
    "end "

/* KEYS per hold: name, timeout keys 1..count; ARGV lease, id, per hold
 * owner, count. */
#define OLD_RENEW_READ \
        "local renewed = {} " \
        "local k = 1 " \
        "for i = 3, #ARGV, 2 do " \
        "  local holds = tonumber(ARGV[i + 1]) " \
        "  if type(redis.pcall('hget', KEYS[k], ARGV[2] .. ':' .. ARGV[i])) == 'string' then " \
        "    for j = 1, holds do redis.call('pexpire', KEYS[k + j], ARGV[1]) end " \
        "    if redis.call('pttl', KEYS[k]) < tonumber(ARGV[1]) then " \
        "      redis.call('pexpire', KEYS[k], ARGV[1]) " \
        "    end " \
        "    renewed[#renewed + 1] = 1 " \
        "  else " \
        "    renewed[#renewed + 1] = 0 " \
        "  end " \
        "  k = k + 1 + holds " \
        "end " \
        "return renewed"

/* No KEYS; ARGV names, lease, id, per name owner, count. */
#define OLD_RENEW_READ_NODE \
        "local n = (#ARGV - 2) / 3 " \
        "local lease = ARGV[n + 1] " \
        "local renewed = {} " \
        "for i = 1, n do " \
        "  local name = ARGV[i] " \
        "  local field = ARGV[n + 2] .. ':' .. ARGV[n + 1 + 2 * i] " \
        "  local r = redis.pcall('hget', name, field) " \
        "  if type(r) == 'string' then " \
        "    local prefix = name " \
        "    if not string.find(name, '{', 1, true) then prefix = '{' .. name .. '}' end " \
        "    for j = 1, tonumber(ARGV[n + 2 + 2 * i]) do " \
        "      redis.call('pexpire', prefix .. ':' .. field .. ':rwlock_timeout:' .. j, lease) " \
        "    end " \
        "    if redis.call('pttl', name) < tonumber(lease) then " \
        "      redis.call('pexpire', name, lease) " \
        "    end " \
        "    renewed[i] = 1 " \
        "  elseif type(r) == 'table' and not string.find(r.err, 'WRONGTYPE', 1, true) then " \
        "    renewed[i] = -1 " \
        "  else " \
        "    renewed[i] = 0 " \
        "  end " \
        "end " \
        "return renewed"

/* KEYS per permit: name, timeout key; ARGV lease, id, per permit id,
 * expiry, publish command. */
#define OLD_RENEW_PERMIT \
        OLD_RENEW_PERMIT_FN \
    "local renewed = {} " \
    "for i = 1, #KEYS / 2 do " \
    "  local j = 2 + 3 * (i - 1) " \
    "  renewed[i] = renew_permit(KEYS[2 * i - 1], KEYS[2 * i], ARGV[j + 1], ARGV[j + 2], " \
    "                            ARGV[j + 3], ARGV[1]) " \
    "end " \
    "return renewed"

/* No KEYS; ARGV names, lease, id, per permit id, expiry, publish. */
#define OLD_RENEW_PERMIT_NODE \
        OLD_RENEW_PERMIT_FN \
    "local n = (#ARGV - 2) / 4 " \
    "local renewed = {} " \
    "for i = 1, n do " \
    "  local name = ARGV[i] " \
    "  local j = n + 2 + 3 * (i - 1) " \
    "  local tag = name " \
    "  if not string.find(name, '{', 1, true) then tag = '{' .. name .. '}' end " \
    "  renewed[i] = renew_permit(name, tag .. ':timeout', ARGV[j + 1], ARGV[j + 2], " \
    "                            ARGV[j + 3], ARGV[n + 1]) " \
    "end " \
    "return renewed"
/* clang-format on */

#endif
