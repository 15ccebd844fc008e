/*
 * tests/redisson_rw.h - Redisson's read-write lock scripts, verbatim
 * (redisson 4.7.0, org/redisson/RedissonReadLock.java,
 * RedissonWriteLock.java, renewal/ReadLockTask.java), each with the SHA1
 * Redis must give it at SCRIPT LOAD: a test loads them and checks, so a
 * byte changed here is caught.  Generated from the Java string literals
 * joined as Java joins them; some end with a space, which is part of the
 * script.
 */
#ifndef LW_TESTS_REDISSON_RW_H
#define LW_TESTS_REDISSON_RW_H

/* RedissonReadLock tryLockInnerAsync (:56) */
#define RS_READ_LOCK_SHA "95553a6ff11176c18e71344e89d116b06fd6f753"
#define RS_READ_LOCK                                                                   \
    "local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis." \
    "call('hset', KEYS[1], 'mode', 'read'); redis.call('hset', KEYS[1], ARGV[2], 1); " \
    "redis.call('set', KEYS[2] .. ':1', 1); redis.call('pexpire', KEYS[2] .. ':1', AR" \
    "GV[1]); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (mode == 'r" \
    "ead') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then" \
    " local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1); local key = KEYS[2] .. " \
    "':' .. ind;redis.call('set', key, 1); redis.call('pexpire', key, ARGV[1]); local" \
    " remainTime = redis.call('pttl', KEYS[1]); redis.call('pexpire', KEYS[1], math.m" \
    "ax(remainTime, ARGV[1])); return nil; end;return redis.call('pttl', KEYS[1]);"

/* RedissonReadLock unlockInnerAsync (:82) */
#define RS_READ_UNLOCK_SHA "6e1b10e11ac0a3ed8e902562ecd32ce01b553039"
#define RS_READ_UNLOCK                                                                 \
    "local val = redis.call('get', KEYS[5]); if val ~= false then return tonumber(val" \
    ");end; local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then" \
    " redis.call(ARGV[3], KEYS[2], ARGV[1]); redis.call('set', KEYS[5], 1, 'px', ARGV" \
    "[4]); return nil; end; local lockExists = redis.call('hexists', KEYS[1], ARGV[2]" \
    "); if (lockExists == 0) then return nil;end; local counter = redis.call('hincrby" \
    "', KEYS[1], ARGV[2], -1); if (counter == 0) then redis.call('hdel', KEYS[1], ARG" \
    "V[2]); end;redis.call('del', KEYS[3] .. ':' .. (counter+1)); if (redis.call('hle" \
    "n', KEYS[1]) > 1) then local maxRemainTime = -3; local keys = redis.call('hkeys'" \
    ", KEYS[1]); for n, key in ipairs(keys) do counter = tonumber(redis.call('hget', " \
    "KEYS[1], key)); if type(counter) == 'number' then for i=counter, 1, -1 do local " \
    "remainTime = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i" \
    "); maxRemainTime = math.max(remainTime, maxRemainTime);end; end; end; if maxRema" \
    "inTime > 0 then redis.call('pexpire', KEYS[1], maxRemainTime); redis.call('set'," \
    " KEYS[5], 0, 'px', ARGV[4]); return 0; end;if mode == 'write' then redis.call('s" \
    "et', KEYS[5], 0, 'px', ARGV[4]); return 0;end; end; redis.call('del', KEYS[1]); " \
    "redis.call(ARGV[3], KEYS[2], ARGV[1]); redis.call('set', KEYS[5], 1, 'px', ARGV[" \
    "4]); return 1; "

/* RedissonReadLock forceUnlockAsync (:165) */
#define RS_READ_FORCE_SHA "27dbe744e95c1d854a7f556cc6817030de2d0d01"
#define RS_READ_FORCE                                                                  \
    "if (redis.call('hget', KEYS[1], 'mode') == 'read') then redis.call('del', KEYS[1" \
    "]); redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1; end; return 0; "

/* RedissonReadLock isLockedAsync (:179) */
#define RS_READ_IS_LOCKED_SHA "8ad44f1ba014938c20da38206b6d496c85ec1aed"
#define RS_READ_IS_LOCKED                                                              \
    "local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == 'read') or (mode =" \
    "= 'write' and redis.call('hlen', KEYS[1]) > 2) then return 1; end; return 0; "

/* RedissonWriteLock tryLockInnerAsync (:54) */
#define RS_WRITE_LOCK_SHA "6306ba3bf1f563b284bed52d305fce615c6664d9"
#define RS_WRITE_LOCK                                                                  \
    "local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis." \
    "call('hset', KEYS[1], 'mode', 'write'); redis.call('hset', KEYS[1], ARGV[2], 1);" \
    " redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (mode == 'write') " \
    "then if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby'" \
    ", KEYS[1], ARGV[2], 1); local currentExpire = redis.call('pttl', KEYS[1]); redis" \
    ".call('pexpire', KEYS[1], currentExpire + ARGV[1]); return nil; end; end;return " \
    "redis.call('pttl', KEYS[1]);"

/* RedissonWriteLock unlockInnerAsync (:77) */
#define RS_WRITE_UNLOCK_SHA "21f5fb0f8ddfa9be5c3e0c9757c128796add75c6"
#define RS_WRITE_UNLOCK                                                                \
    "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val" \
    ");end; local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then" \
    " redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV" \
    "[5]); return nil; end;if (mode == 'write') then local lockExists = redis.call('h" \
    "exists', KEYS[1], ARGV[3]); if (lockExists == 0) then return nil;else local coun" \
    "ter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.c" \
    "all('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); " \
    "return 0; else redis.call('hdel', KEYS[1], ARGV[3]); if (redis.call('hlen', KEYS" \
    "[1]) == 1) then redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]" \
    "); else redis.call('hset', KEYS[1], 'mode', 'read'); end; redis.call('set', KEYS" \
    "[3], 1, 'px', ARGV[5]); return 1; end; end; end; return nil;"

/* RedissonWriteLock forceUnlockAsync (:125) */
#define RS_WRITE_FORCE_SHA "2e2cb2a3b13e2e80e4236ef6a25beaf365dba608"
#define RS_WRITE_FORCE                                                                 \
    "if (redis.call('hget', KEYS[1], 'mode') == 'write') then redis.call('del', KEYS[" \
    "1]); redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1; end; return 0; "

/* renewal/ReadLockTask (>= 4.4.0, :93) */
#define RS_READ_RENEW_SHA "38d2b478dfbe264ab67c221b7e4be62245f00ba0"
#define RS_READ_RENEW                                                                  \
    "local result = {} local argIdx = 2 for i = 1, #KEYS, 2 do local anyAlive = false" \
    "; local lockNamesCount = tonumber(ARGV[argIdx]); argIdx = argIdx + 1; for k = 1," \
    " lockNamesCount do local counter = redis.call('hget', KEYS[i], ARGV[argIdx]); if" \
    " (counter ~= false) then anyAlive = true; for c=counter, 1, -1 do redis.call('pe" \
    "xpire', KEYS[i+1] .. ':' .. ARGV[argIdx] .. ':rwlock_timeout:' .. c, ARGV[1]); e" \
    "nd; end; argIdx = argIdx + 1; end; if (anyAlive) then redis.call('pexpire', KEYS" \
    "[i], ARGV[1]); table.insert(result, 1); else table.insert(result, 0); end; end; " \
    "return result;"

#endif
