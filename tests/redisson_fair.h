/*
 * tests/redisson_fair.h - Redisson's RFairLock scripts (redisson 4.7.0,
 * RedissonFairLock.java), verbatim: the Java string literals joined as Java
 * joins them (its // lines are Java comments, not in the strings).  Each
 * with the SHA1 SCRIPT LOAD must answer for it, which the tests check
 * before they use it, so a changed byte cannot pass unseen.
 *
 * KEYS and ARGV, as Redisson passes them (the lock name: "<client id>:<thread
 * id>"; times: the caller's epoch ms; wait: fairLockWaitTimeout, 300000 by
 * default, or tryLock's wait):
 *   RS_FAIR_TRY     tryLock(): try once, never enqueue (EVAL_NULL_BOOLEAN).
 *                   KEYS name, queue, timeouts; ARGV lease, lock name, now,
 *                   wait.  nil: acquired; 1: not
 *   RS_FAIR_LOCK    lock(), tryLock(wait): try, else enqueue (EVAL_LONG).
 *                   KEYS name, queue, timeouts; ARGV lease, lock name, wait,
 *                   now (swapped against TRY's).  nil: acquired; else the
 *                   ms to wait for a message
 *   RS_FAIR_FAILED  acquireFailedAsync: leave the queue.  KEYS queue,
 *                   timeouts; ARGV lock name, wait
 *   RS_FAIR_UNLOCK  unlockInnerAsync.  KEYS name, queue, timeouts, channel,
 *                   unlock latch; ARGV 0, lease, lock name, now, publish,
 *                   latch ms.  1: freed; 0: held still; nil: not ours
 *   RS_FAIR_FORCE   forceUnlockAsync.  KEYS name, queue, timeouts, channel;
 *                   ARGV 0, now, publish.  1: deleted; 0: not
 */
#ifndef LW_TESTS_REDISSON_FAIR_H
#define LW_TESTS_REDISSON_FAIR_H

#define RS_FAIR_TRY_SHA "d20501c26a30adf6fb0fe9883bbbcc497e6157e2"
#define RS_FAIR_TRY \
    "while true do local firstThreadId2 = redis.call('lindex', KEYS[2], 0);if first" \
    "ThreadId2 == false then break;end;local timeout = redis.call('zscore', KEYS[3]" \
    ", firstThreadId2);if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[3" \
    "]) then redis.call('zrem', KEYS[3], firstThreadId2);redis.call('lpop', KEYS[2]" \
    ");else break;end;end;if (redis.call('exists', KEYS[1]) == 0) and ((redis.call(" \
    "'exists', KEYS[2]) == 0) or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) the" \
    "n redis.call('lpop', KEYS[2]);redis.call('zrem', KEYS[3], ARGV[2]);local keys " \
    "= redis.call('zrange', KEYS[3], 0, -1);for i = 1, #keys, 1 do redis.call('zinc" \
    "rby', KEYS[3], -tonumber(ARGV[4]), keys[i]);end;redis.call('hset', KEYS[1], AR" \
    "GV[2], 1);redis.call('pexpire', KEYS[1], ARGV[1]);return nil;end;if (redis.cal" \
    "l('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[" \
    "2], 1);redis.call('pexpire', KEYS[1], ARGV[1]);return nil;end;return 1;"

#define RS_FAIR_LOCK_SHA "8f6ed299ffd259f0539c20f89253998c0777ea75"
#define RS_FAIR_LOCK \
    "while true do local firstThreadId2 = redis.call('lindex', KEYS[2], 0);if first" \
    "ThreadId2 == false then break;end;local timeout = redis.call('zscore', KEYS[3]" \
    ", firstThreadId2);if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4" \
    "]) then redis.call('zrem', KEYS[3], firstThreadId2);redis.call('lpop', KEYS[2]" \
    ");else break;end;end;if (redis.call('exists', KEYS[1]) == 0) and ((redis.call(" \
    "'exists', KEYS[2]) == 0) or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) the" \
    "n redis.call('lpop', KEYS[2]);redis.call('zrem', KEYS[3], ARGV[2]);local keys " \
    "= redis.call('zrange', KEYS[3], 0, -1);for i = 1, #keys, 1 do redis.call('zinc" \
    "rby', KEYS[3], -tonumber(ARGV[3]), keys[i]);end;redis.call('hset', KEYS[1], AR" \
    "GV[2], 1);redis.call('pexpire', KEYS[1], ARGV[1]);return nil;end;if redis.call" \
    "('hexists', KEYS[1], ARGV[2]) == 1 then redis.call('hincrby', KEYS[1], ARGV[2]" \
    ",1);redis.call('pexpire', KEYS[1], ARGV[1]);return nil;end;local timeout = red" \
    "is.call('zscore', KEYS[3], ARGV[2]);if timeout ~= false then local ttl = redis" \
    ".call('pttl', KEYS[1]);return math.max(0, ttl); end;local lastThreadId = redis" \
    ".call('lindex', KEYS[2], -1);local ttl;if lastThreadId ~= false and lastThread" \
    "Id ~= ARGV[2] and redis.call('zscore', KEYS[3], lastThreadId) ~= false then tt" \
    "l = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - tonumber(ARGV[4]);" \
    "else ttl = redis.call('pttl', KEYS[1]);end;local timeout = ttl + tonumber(ARGV" \
    "[3]) + tonumber(ARGV[4]);if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1" \
    " then redis.call('rpush', KEYS[2], ARGV[2]);end;return ttl;"

#define RS_FAIR_FAILED_SHA "d1ddef65ad80886b5d36e023c99930044ddd653a"
#define RS_FAIR_FAILED \
    "local queue = redis.call('lrange', KEYS[1], 0, -1);local i = 1;while i <= #que" \
    "ue and queue[i] ~= ARGV[1] do i = i + 1;end;i = i + 1;while i <= #queue do red" \
    "is.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i]);i = i + 1;end;redis." \
    "call('zrem', KEYS[2], ARGV[1]);redis.call('lrem', KEYS[1], 0, ARGV[1]);"

#define RS_FAIR_UNLOCK_SHA "367f80bd2e300e411fb0936d9b601e5bcb3fd4b6"
#define RS_FAIR_UNLOCK \
    "local val = redis.call('get', KEYS[5]); if val ~= false then return tonumber(v" \
    "al);end; while true do local firstThreadId2 = redis.call('lindex', KEYS[2], 0)" \
    ";if firstThreadId2 == false then break;end; local timeout = redis.call('zscore" \
    "', KEYS[3], firstThreadId2);if timeout ~= false and tonumber(timeout) <= tonum" \
    "ber(ARGV[4]) then redis.call('zrem', KEYS[3], firstThreadId2); redis.call('lpo" \
    "p', KEYS[2]); else break;end; end;if (redis.call('exists', KEYS[1]) == 0) then" \
    " local nextThreadId = redis.call('lindex', KEYS[2], 0); if nextThreadId ~= fal" \
    "se then redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); end; red" \
    "is.call('set', KEYS[5], 1, 'px', ARGV[6]); return 1; end;if (redis.call('hexis" \
    "ts', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('" \
    "hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', K" \
    "EYS[1], ARGV[2]); redis.call('set', KEYS[5], 0, 'px', ARGV[6]); return 0; end;" \
    " redis.call('del', KEYS[1]); redis.call('set', KEYS[5], 1, 'px', ARGV[6]); loc" \
    "al nextThreadId = redis.call('lindex', KEYS[2], 0); if nextThreadId ~= false t" \
    "hen redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); end; return " \
    "1; "

#define RS_FAIR_FORCE_SHA "71ed11d4e4818119ac560b3d670a7f08256afc46"
#define RS_FAIR_FORCE \
    "while true do local firstThreadId2 = redis.call('lindex', KEYS[2], 0);if first" \
    "ThreadId2 == false then break;end; local timeout = redis.call('zscore', KEYS[3" \
    "], firstThreadId2);if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[" \
    "2]) then redis.call('zrem', KEYS[3], firstThreadId2); redis.call('lpop', KEYS[" \
    "2]); else break;end; end;if (redis.call('del', KEYS[1]) == 1) then local nextT" \
    "hreadId = redis.call('lindex', KEYS[2], 0); if nextThreadId ~= false then redi" \
    "s.call(ARGV[3], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); end; return 1; end; " \
    "return 0;"

#endif
