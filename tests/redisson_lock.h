/*
 * tests/redisson_lock.h - Redisson's RLock acquire (redisson 4.7,
 * RedissonLock.tryLockInnerAsync), verbatim: the Java string literals
 * joined as Java joins them.  With the SHA1 SCRIPT LOAD must answer for
 * it, which the tests check before they use it.
 *
 *   RS_LOCK_TRY  KEYS name; ARGV lease ms, lock name ("<client id>:<thread
 *                id>").  nil: acquired (or re-entered); else the PTTL of
 *                the holder's hash.
 */
#ifndef LW_TESTS_REDISSON_LOCK_H
#define LW_TESTS_REDISSON_LOCK_H

#define RS_LOCK_TRY_SHA "149c5a8bf18676fd99e9e6e24923bd64d9b62f94"
#define RS_LOCK_TRY                                                                         \
    "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) " \
    "== 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1]" \
    ", ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"

#endif
