/*
 * core/scripts.c - the Lua scripts, loaded on every connection.
 *
 * They keep Redisson's RLock layout (a hash at the name, one field
 * "<client id>:<owner>" holding the hold count, PEXPIRE as the lease,
 * "0" published on the lock's channel by the last unlock), so Redisson
 * clients and ours exclude each other.  What they return is ours.
 *
 * Unlock messages go out with the command the caller names in ARGV,
 * "publish" or "spublish" (sharded pub/sub in a cluster), as Redisson's
 * RedissonBaseLock passes its publish command.
 */

/* clang-format off: Lua, one line of it per C line. */

/* Only Redis's clock times a lease.  A script that writes an expiry of
 * its own (a permit's score, a waiter's give-up time and place) reads
 * Redis's TIME for it, so that no client's wall clock, stepped, skewed or
 * asleep, enters a lease: the lease counts from the command's last write,
 * as a PEXPIRE does.  A script that reads TIME before it writes must be
 * replicated by its effects: the only way from Redis 5 (and 7's only
 * one), asked for on 3.2 and 4. */
#define LUA_EFFECTS "if redis.replicate_commands then redis.replicate_commands() end "
#define LUA_NOW                                                           \
    LUA_EFFECTS                                                           \
    "local function now_ms() "                                            \
    "  local t = redis.call('time') "                                     \
    "  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) " \
    "end "

/* A renewal's answers, then Redis's clock in microseconds when it ran
 * (read after every write: no effects replication needed), which the
 * watchdog holds against its own clock to notice a step of Redis's
 * (redis_clock.c). */
#define LUA_STAMPED                                            \
    "local function stamped(r) "                               \
    "  local t = redis.call('time') "                          \
    "  r[#r + 1] = tonumber(t[1]) * 1000000 + tonumber(t[2]) " \
    "  return r "                                              \
    "end "

/* Fencing tokens (lock.c, lw_lock_set_fenced()).  draw_token() is a
 * first acquire's: the name's counter (Redisson's RFencedLock's,
 * redisson_lock_token:{name}) counted up; when it is missing (never made,
 * or lost with Redis's data) it is made at Redis's clock in microseconds,
 * above every token a counter could have given before (a million
 * acquires a second it cannot reach), unless Redis's clock stepped back
 * past it.  token_of() is a re-entry's: the counter as it is.  A handle
 * that draws no token passes the lock's own name for the counter (a key
 * of its slot): 0, and no key made.  The caller's script starts with
 * LUA_EFFECTS: TIME before a write. */
#define LUA_TOKEN                                                          \
    "local function draw_token(counter, name) "                            \
    "  if counter == name then return 0 end "                              \
    "  if redis.call('exists', counter) == 1 then "                        \
    "    return redis.call('incr', counter) "                              \
    "  end "                                                               \
    "  local t = redis.call('time') "                                      \
    "  local v = string.format('%d%06d', tonumber(t[1]), tonumber(t[2])) " \
    "  redis.call('set', counter, v) "                                     \
    "  return tonumber(v) "                                                \
    "end "                                                                 \
    "local function token_of(counter, name) "                              \
    "  if counter == name then return 0 end "                              \
    "  return tonumber(redis.call('get', counter) or '0') "                \
    "end "

/* Redisson's hash-tag rule (tag.h's, in C), for the keys a script names
 * from a name it is handed: "{name}", or the name when it has a '{'. */
#define LUA_TAG                                                  \
    "local function tag(name) "                                  \
    "  if string.find(name, '{', 1, true) then return name end " \
    "  return '{' .. name .. '}' "                               \
    "end "

/* The channel of the lock at key k, by Redisson's prefixName rule (lock.c's
 * prefix_name()), for scripts that are handed only the lock's name. */
#define LUA_CHANNEL_OF \
    LUA_TAG            \
    "local function channel(k) return '" CHANNEL_PREFIX ":' .. tag(k) end "

/* Semaphores (semaphore.c), in Redisson's RPermitExpirableSemaphore layout:
 * KEYS[1] the available count (a string), KEYS[2] the acquired permits (a
 * zset: id -> expiry in epoch ms: Redis's TIME for ours, the writer's
 * clock for a Redisson client's), KEYS[3] the
 * channel.  reclaim() moves every permit expired by `now` back to the
 * count and publishes the count when it is above 0, as Redisson's scripts
 * do before an acquire: expiry is lazy, and every client does it for
 * every other.  ZREM goes in chunks: unpack() has a stack limit.  count()
 * is the available count; a string that is no count (a name that holds
 * something else) is refused as Redis refuses another type, WRONGTYPE,
 * before anything is touched. */
#define LUA_SEM_RECLAIM                                                         \
    "local function count() "                                                   \
    "  local v = tonumber(redis.call('get', KEYS[1])) "                         \
    "  if v == nil then "                                                       \
    "    error({err = 'WRONGTYPE Operation against a key holding the wrong "    \
    "kind of value (a string, not a count of permits)'}) "                      \
    "  end "                                                                    \
    "  return v "                                                               \
    "end "                                                                      \
    "local function reclaim(now, publish) "                                     \
    "  local ids = redis.call('zrangebyscore', KEYS[2], 0, now) "               \
    "  if #ids == 0 then return end "                                           \
    "  for i = 1, #ids, 1000 do "                                               \
    "    redis.call('zrem', KEYS[2], unpack(ids, i, math.min(i + 999, #ids))) " \
    "  end "                                                                    \
    "  local value = redis.call('incrby', KEYS[1], #ids) "                      \
    "  if value > 0 then redis.call(publish, KEYS[3], value) end "              \
    "end "

/* renew_permit(timeout, id, expiry) moves one id to a new expiry (a
 * string: the callers format it once, where a Lua number would be
 * formatted again by every call it is passed to) if it
 * is still there (after a reclaim, that is "there and not expired"): 1,
 * or 0 when it is gone, and is never added back (XX).  It only ever
 * raises the score (GT): a renewal that reaches Redis after a later one
 * (written on a connection given up since, its bytes delivered late)
 * must not take back the lease the later one proved.  So 1 means the
 * score is the new expiry or later: the id lasts a lease from when the
 * script ran at least.  ZADD XX GT CH answers 1 when it moved the score;
 * 0 when the id is gone, or already at that score or above: ZSCORE tells
 * the two apart, off the common path.  A server without GT (before Redis
 * 6.2) refuses it once, and the rest of the call compares in Lua. */
#define LUA_RENEW_PERMIT                                                        \
    "local has_gt = true "                                                      \
    "local function renew_permit(timeout, id, expiry) "                         \
    "  if has_gt then "                                                         \
    "    local r = redis.pcall('zadd', timeout, 'XX', 'GT', 'CH', expiry, id) " \
    "    if r == 1 then return 1 end "                                          \
    "    if type(r) == 'number' then "                                          \
    "      if redis.call('zscore', timeout, id) then return 1 end "             \
    "      return 0 "                                                           \
    "    end "                                                                  \
    "    has_gt = false "                                                       \
    "  end "                                                                    \
    "  local score = redis.call('zscore', timeout, id) "                        \
    "  if not score then return 0 end "                                         \
    "  if tonumber(score) < tonumber(expiry) then "                             \
    "    redis.call('zadd', timeout, 'XX', expiry, id) "                        \
    "  end "                                                                    \
    "  return 1 "                                                               \
    "end "

/* Permits' renewals (kind_permit.c), a call's permits grouped by their
 * semaphore.  reclaim_expired() runs once per semaphore per call, at the
 * call's "now" (Redis's TIME, one reading for every permit of the call),
 * as Redisson's scripts reclaim before they touch the zset: the expired
 * ids go back to the count, which is published when above 0.  Its
 * answer is the semaphore's state for the call: 1 reclaimed, 0 the zset
 * is a key of another type (its permits lost, nothing touched), -1 not
 * served by this node (a cluster's refusal, through pcall).  Then each
 * id is moved to now + the lease (renew_permit()). */
#define LUA_RENEW_PERMITS                                                       \
    LUA_TAG                                                                     \
    LUA_NOW                                                                     \
    LUA_STAMPED                                                                 \
    LUA_RENEW_PERMIT                                                            \
    "local function reclaim_expired(name, timeout, now, publish) "              \
    "  local ids = redis.pcall('zrangebyscore', timeout, 0, now) "              \
    "  if ids.err then "                                                        \
    "    if string.find(ids.err, 'WRONGTYPE', 1, true) then return 0 end "      \
    "    return -1 "                                                            \
    "  end "                                                                    \
    "  if #ids == 0 then return 1 end "                                         \
    "  for i = 1, #ids, 1000 do "                                               \
    "    redis.call('zrem', timeout, unpack(ids, i, math.min(i + 999, #ids))) " \
    "  end "                                                                    \
    "  local value = redis.pcall('incrby', name, #ids) "                        \
    "  if type(value) == 'number' and value > 0 then "                          \
    "    redis.call(publish, 'redisson_sc:' .. tag(name), value) "              \
    "  end "                                                                    \
    "  return 1 "                                                               \
    "end "

/* A node batch's answer for a name whose HEXISTS, through pcall, did not
 * say 1: -1 when the node refused the key (a slot moved away or
 * migrating: the cluster's refusal is an error table), to be sent again
 * on its own, routed by its slot; 0 when the field is not there or the
 * key is of another type (WRONGTYPE): not ours. */
#define LUA_NOT_RENEWED                                                         \
    "local function not_renewed(r) "                                            \
    "  if type(r) == 'table' and not string.find(r.err, 'WRONGTYPE', 1, true) " \
    "  then return -1 end "                                                     \
    "  return 0 "                                                               \
    "end "

/* raise(key, score, member): see LUA_FAIR below. */
#define LUA_RAISE                                            \
    "local function raise(key, score, member) "              \
    "  local s = redis.call('zscore', key, member) "         \
    "  if s == false or tonumber(s) < tonumber(score) then " \
    "    redis.call('zadd', key, score, member) "            \
    "  end "                                                 \
    "end "

/* Fair locks (way_fair.c), in Redisson's RFairLock layout:
 * KEYS[1] the lock's hash, KEYS[2] the queue (a list of the waiters'
 * fields), KEYS[3] their give-up times (a zset, epoch ms), KEYS[4] the
 * leasewheel waiters' places (a zset, epoch ms, ours).  prune() drops the
 * queue's head while it is stale, as every Redisson script does first:
 * its give-up time passed (Redisson's rule), its place's lease ran out
 * (ours: the waiter died), or it has no give-up time at all (no waiter
 * but a leftover: Redisson would wait on it for ever); it answers
 * whether it dropped any.  Only the head: a stale waiter further back
 * holds nobody up until it heads the queue.  wake() publishes on the
 * head's own channel when the lock is free, so that the waiter whose
 * turn it is hears of it: after an unlock, as Redisson's unlock does, and
 * after a drop or a leave, which Redisson's scripts leave unheard (its
 * waiters then wait out a PTTL or a give-up time).  raise() moves a
 * waiter's score up, never down (a call that reached Redis late must not
 * take back what a later one gave), adding it when absent. */
#define LUA_FAIR                                                                          \
    LUA_NOW                                                                               \
    LUA_KEEP_PLACE                                                                        \
    "local function prune(now) "                                                          \
    "  local dropped = false "                                                            \
    "  while true do "                                                                    \
    "    local head = redis.call('lindex', KEYS[2], 0) "                                  \
    "    if head == false then break end "                                                \
    "    local t = redis.call('zscore', KEYS[3], head) "                                  \
    "    local p = redis.call('zscore', KEYS[4], head) "                                  \
    "    if t ~= false and tonumber(t) > now and (p == false or tonumber(p) > now) then " \
    "      break "                                                                        \
    "    end "                                                                            \
    "    redis.call('zrem', KEYS[3], head) "                                              \
    "    redis.call('zrem', KEYS[4], head) "                                              \
    "    redis.call('lpop', KEYS[2]) "                                                    \
    "    dropped = true "                                                                 \
    "  end "                                                                              \
    "  return dropped "                                                                   \
    "end "                                                                                \
    "local function wake(channel, publish, except) "                                      \
    "  if redis.call('exists', KEYS[1]) == 1 then return end "                            \
    "  local head = redis.call('lindex', KEYS[2], 0) "                                    \
    "  if head ~= false and head ~= except then "                                         \
    "    redis.call(publish, channel .. ':' .. head, '0') "                               \
    "  end "                                                                              \
    "end "

/* keep() keeps a live leasewheel waiter in line, by Redis's clock
 * `now`: its place (KEYS' places zset) to now + its place lease, and its
 * give-up time (Redisson's) to at least now + its place lease + the wait
 * for every waiter up to and including it (pos: 1 at the head).  Every
 * acquire or leave ahead of it lowers its give-up time by the wait
 * (Redisson's rule, ours too), and fewer than pos of those can happen
 * before it heads the line: its give-up time stays past its place's end
 * whatever goes on ahead, so a live waiter is never dropped as stale,
 * and a dead one drops out by its place.  The places' key lives a place
 * lease past the give-up time it last wrote, so that it outlives every
 * leasewheel waiter's give-up time: a waiter without a place is taken for
 * a Redisson one, kept to its give-up time (minutes), and a dead one
 * whose place went with the key before anyone pruned it (every waiter
 * cut off, two place leases) held the queue that long.  It goes with the
 * last leasewheel waiter (the last ZREM), or soon after the last give-up
 * time. */
#define LUA_KEEP_PLACE                                            \
    LUA_RAISE                                                     \
    "local function keep(t, p, field, now, place_ms, wait, pos) " \
    "  raise(t, now + place_ms + wait * pos, field) "             \
    "  raise(p, now + place_ms, field) "                          \
    "  local ttl = 2 * place_ms + wait * pos "                    \
    "  if redis.call('pttl', p) < ttl then "                      \
    "    redis.call('pexpire', p, ttl) "                          \
    "  end "                                                      \
    "end "

/* Places' renewals (kind_place.c): renew_place() keeps a waiter (keep())
 * while it is in the queue q and has a give-up time in t: 1; 0 once it
 * is gone.  Its position is read from the queue once per queue a call. */
#define LUA_RENEW_PLACES                                                \
    LUA_NOW                                                             \
    LUA_STAMPED                                                         \
    LUA_KEEP_PLACE                                                      \
    "local positions = {} "                                             \
    "local function renew_place(t, p, q, field, now, place_ms, wait) "  \
    "  local at = positions[q] "                                        \
    "  if at == nil then "                                              \
    "    at = {} "                                                      \
    "    local line = redis.call('lrange', q, 0, -1) "                  \
    "    for i = 1, #line do at[line[i]] = i end "                      \
    "    positions[q] = at "                                            \
    "  end "                                                            \
    "  if at[field] == nil or redis.call('zscore', t, field) == false " \
    "  then return 0 end "                                              \
    "  keep(t, p, field, now, place_ms, wait, at[field]) "              \
    "  return 1 "                                                       \
    "end "

/* Read holds' renewals (kind_read.c): stretch() sets a read-write lock's
 * hash to max(PTTL, lease) and notes the name in `stretched`, for the
 * callers to do it once per name per call (every hold of a call has the
 * same lease).  One PEXPIRE GT where the server has it (Redis 7);
 * it leaves a hash without a TTL alone ("infinite"), which PTTL < lease
 * did not, so that case (0, then PTTL -1) gets the lease as before.  A
 * server without GT (Redis 6) refuses it once, and the rest of the call
 * does PTTL and PEXPIRE: the hash exists (its field was just read), so
 * GT's is the only error PEXPIRE can give. */
#define LUA_STRETCH_HASH                                       \
    "local has_gt = true "                                     \
    "local stretched = {} "                                    \
    "local function stretch(name, lease) "                     \
    "  stretched[name] = true "                                \
    "  if has_gt then "                                        \
    "    local r = redis.pcall('pexpire', name, lease, 'GT') " \
    "    if type(r) == 'number' then "                         \
    "      if r == 0 and redis.call('pttl', name) == -1 then " \
    "        redis.call('pexpire', name, lease) "              \
    "      end "                                               \
    "      return "                                            \
    "    end "                                                 \
    "    has_gt = false "                                      \
    "  end "                                                   \
    "  if redis.call('pttl', name) < tonumber(lease) then "    \
    "    redis.call('pexpire', name, lease) "                  \
    "  end "                                                   \
    "end "
/* A name whose hash is not a lock's: an application's own (HSET ahash f
 * v).  No acquire would ever take it, and no release or expiry would end
 * its "hold", so a waiter would wait for ever: it is refused as Redis
 * refuses another type, WRONGTYPE, before anything is touched.  A plain
 * lock's hash, Redisson's RLock and ours alike, has one field,
 * "<id>:<owner>" (a Redisson UUID and thread id, our client id and
 * owner), holding its hold count; a read-write lock's has `mode`, read or
 * write.  must_be_lock(k) is called only off the fast paths, when k
 * exists, has no `mode` and the caller does not hold it: one HLEN, and
 * an HGETALL of one field. */
#define LUA_MUST_BE_LOCK                                                              \
    "local function not_a_lock() "                                                    \
    "  error({err = 'WRONGTYPE Operation against a key holding the wrong kind of "    \
    "value (a hash that is not a lock)'}) "                                           \
    "end "                                                                            \
    "local function must_be_lock(k) "                                                 \
    "  local f, owners = redis.call('hgetall', k), 0 "                                \
    "  for i = 1, #f, 2 do "                                                          \
    "    if f[i] ~= '" ELECT_TERM_FIELD "' and f[i] ~= '" ELECT_VALUE_FIELD "' then " \
    "      if not string.find(f[i], ':', 1, true) or "                                \
    "         not string.match(f[i + 1], '^%d+$') then "                              \
    "        not_a_lock() "                                                           \
    "      end "                                                                      \
    "      owners = owners + 1 "                                                      \
    "    end "                                                                        \
    "  end "                                                                          \
    "  if owners ~= 1 then not_a_lock() end "                                         \
    "end "                                                                            \
    "local function must_be_rw(mode) "                                                \
    "  if mode ~= 'read' and mode ~= 'write' then not_a_lock() end "                  \
    "end "
#include "scripts.h"

/* An elected leader's hash whose last owner's field went (a drop of a lost
 * lease) goes whole: its term and value were the leader's, and a hash of
 * them alone would be nobody's lock, in every candidate's way until its
 * lease ran out. */
#define LUA_VACATE                                                      \
    "local function vacate(k) "                                         \
    "  if redis.call('hlen', k) == 2 and "                              \
    "     redis.call('hexists', k, '" ELECT_TERM_FIELD "') == 1 and "   \
    "     redis.call('hexists', k, '" ELECT_VALUE_FIELD "') == 1 then " \
    "    redis.call('del', k) "                                         \
    "  end "                                                            \
    "end "

/* A lock's acquire (ARGV[1] lease ms, ARGV[2] field) on a name that
 * exists: a read-write lock's, {-1}; the caller's own, re-entered (one
 * hold more, the lease only lengthened), {token, holds} with the token as
 * the expression `token` reads it; another's, its PTTL (WRONGTYPE when it
 * is no lock).  SCRIPT_LOCK's and SCRIPT_ELECT's tail. */
#define LUA_LOCK_TAKEN(token)                                     \
    "local mode = redis.call('hget', KEYS[1], 'mode') "           \
    "if mode then "                                               \
    "  must_be_rw(mode) "                                         \
    "  return {-1} "                                              \
    "end "                                                        \
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "       \
    "  local holds = redis.call('hincrby', KEYS[1], ARGV[2], 1) " \
    "  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then "  \
    "    redis.call('pexpire', KEYS[1], ARGV[1]) "                \
    "  end "                                                      \
    "  return {" token ", holds} "                                \
    "end "                                                        \
    "must_be_lock(KEYS[1]) "                                      \
    "return redis.call('pttl', KEYS[1])"

/* A fair lock's acquire (SCRIPT_FAIR_LOCK's, below), which SCRIPT_ELECT_FAIR
 * shares: TAKE takes the free lock for the caller (the queue's head, or
 * nobody queued) and returns {token, 1}; TERM_OF reads a re-entry's
 * token. */
#define LUA_FAIR_ACQUIRE(TAKE, TERM_OF)                                                           \
    "local now, me, place_ms = now_ms(), ARGV[2], tonumber(ARGV[7]) "                             \
    "if prune(now) then wake(ARGV[4], ARGV[5], me) end "                                          \
    "local head = redis.call('lindex', KEYS[2], 0) "                                              \
    "if redis.call('exists', KEYS[1]) == 0 and (head == false or head == me) then "               \
    "  if head == me then redis.call('lpop', KEYS[2]) end "                                       \
    "  redis.call('zrem', KEYS[3], me) "                                                          \
    "  redis.call('zrem', KEYS[4], me) "                                                          \
    "  local keys = redis.call('zrange', KEYS[3], 0, -1) "                                        \
    "  for i = 1, #keys do redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]) end " TAKE \
    "end "                                                                                        \
    "local mode = redis.call('hget', KEYS[1], 'mode') "                                           \
    "if mode then "                                                                               \
    "  must_be_rw(mode) "                                                                         \
    "  return {-1} "                                                                              \
    "end "                                                                                        \
    "if redis.call('hexists', KEYS[1], me) == 1 then "                                            \
    "  local holds = redis.call('hincrby', KEYS[1], me, 1) "                                      \
    "  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then "                                  \
    "    redis.call('pexpire', KEYS[1], ARGV[1]) "                                                \
    "  end "                                                                                      \
    "  return {" TERM_OF ", holds} "                                                              \
    "end "                                                                                        \
    "if redis.call('exists', KEYS[1]) == 1 then must_be_lock(KEYS[1]) end "                       \
    "local pttl = redis.call('pttl', KEYS[1]) "                                                   \
    "if ARGV[6] == '0' then return pttl end "                                                     \
    "if redis.call('zscore', KEYS[3], me) == false then "                                         \
    "  local last = redis.call('lindex', KEYS[2], -1) "                                           \
    "  local ttl = pttl "                                                                         \
    "  if last ~= false and last ~= me and redis.call('zscore', KEYS[3], last) ~= false then "    \
    "    ttl = tonumber(redis.call('zscore', KEYS[3], last)) - now "                              \
    "  end "                                                                                      \
    "  if redis.call('zadd', KEYS[3], ttl + tonumber(ARGV[3]) + now, me) == 1 then "              \
    "    redis.call('rpush', KEYS[2], me) "                                                       \
    "  end "                                                                                      \
    "end "                                                                                        \
    "local line = redis.call('lrange', KEYS[2], 0, -1) "                                          \
    "local pos = #line "                                                                          \
    "for i = 1, #line do if line[i] == me then pos = i break end end "                            \
    "keep(KEYS[3], KEYS[4], me, now, place_ms, tonumber(ARGV[3]), pos) "                          \
    "head = line[1] "                                                                             \
    "if head == nil or head == me then return pttl end "                                          \
    "local at = tonumber(redis.call('zscore', KEYS[3], head) or now) "                            \
    "local p = redis.call('zscore', KEYS[4], head) "                                              \
    "if p ~= false and tonumber(p) < at then at = tonumber(p) end "                               \
    "return math.max(1, at - now) "

/* A fair lock's release of one hold (SCRIPT_FAIR_UNLOCK's, below), which
 * SCRIPT_RESIGN_FAIR shares: -1 not the caller's (untouched), else the
 * holds left; the last runs LAST before the key goes and WOKEN after the
 * queue's head is woken. */
#define LUA_FAIR_RELEASE(LAST, WOKEN)                            \
    "prune(now_ms()) "                                           \
    "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then "      \
    "  wake(ARGV[3], ARGV[2]) "                                  \
    "  return -1 "                                               \
    "end "                                                       \
    "local holds = redis.call('hincrby', KEYS[1], ARGV[1], -1) " \
    "if holds > 0 then return holds end " LAST                   \
    "redis.call('del', KEYS[1]) "                                \
    "wake(ARGV[3], ARGV[2]) " WOKEN                              \
    "return 0"

/* A script is one string literal, and the fair lock's acquire (its queue,
 * places, give-up times, token and type checks) is longer than the 4095
 * bytes C99 promises.  GCC and Clang, which the library requires
 * (docs/design.md, "The library boundary"), take any length. */
#pragma GCC diagnostic ignored "-Woverlength-strings"

const char *const lw_lock_scripts[SCRIPT_COUNT] = {
    /* Acquire.  Free, or ours already: take a hold and set the lease (a
     * reentrant acquire only lengthens it: a short explicit lease must not
     * cut the watchdog's short).  A first acquire draws the fencing token
     * (draw_token(): 0 for a handle that draws none); a reentrant one reads
     * it.  Returns {token, holds}, or the
     * holder's PTTL when held by another; {-1}: the name is a read-write
     * lock's (a `mode` field), not to be touched; WRONGTYPE: a hash that
     * is no lock (must_be_lock()). */
    [SCRIPT_LOCK] =
        LUA_EFFECTS
            LUA_TOKEN
                LUA_MUST_BE_LOCK
    "if redis.call('exists', KEYS[1]) == 0 then "
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1) "
    "  redis.call('pexpire', KEYS[1], ARGV[1]) "
    "  return {draw_token(KEYS[2], KEYS[1]), 1} "
    "end " LUA_LOCK_TAKEN("token_of(KEYS[2], KEYS[1])"),

    /* Release one hold.  -1: not ours (untouched).  Otherwise the holds
     * left; at 0 the key is gone and waiters are told.  A partial unlock
     * leaves the lease alone: the watchdog, or the explicit lease, rules. */
    [SCRIPT_UNLOCK] =
        "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return -1 end "
        "local holds = redis.call('hincrby', KEYS[1], ARGV[1], -1) "
        "if holds > 0 then return holds end "
        "redis.call('del', KEYS[1]) "
        "redis.call(ARGV[2], KEYS[2], '0') "
        "return 0",

    /* Release one hold and, when it was the last, hand the lock to the
     * client's next waiter (ARGV[2]) in the same step: its field with one
     * hold and a fresh lease (ARGV[3]), and the next fencing token.  Nobody
     * sees the lock free, so nobody else can get in, and nothing is
     * published: the lock did not become free.  {holds left} when holds are
     * left (a partial unlock, lease untouched); {0, token, 1} when handed
     * over; {-1} when the releaser holds none (untouched); {-2, token,
     * holds} when it holds none but the waiter does: this call ran before
     * (a resent one), or the waiter's owner holds the lock another way.
     * Then the waiter's lease is lengthened as a reentrant acquire's is:
     * the client counts it from this call, not from the one that ran. */
    [SCRIPT_HANDOFF] =
        LUA_EFFECTS
            LUA_TOKEN
    "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then "
    "  if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "
    "    if redis.call('pttl', KEYS[1]) < tonumber(ARGV[3]) then "
    "      redis.call('pexpire', KEYS[1], ARGV[3]) "
    "    end "
    "    return {-2, token_of(KEYS[2], KEYS[1]), "
    "            tonumber(redis.call('hget', KEYS[1], ARGV[2]))} "
    "  end "
    "  return {-1} "
    "end "
    "local holds = redis.call('hincrby', KEYS[1], ARGV[1], -1) "
    "if holds > 0 then return {holds} end "
    "redis.call('del', KEYS[1]) "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1) "
    "redis.call('pexpire', KEYS[1], ARGV[3]) "
    "return {0, draw_token(KEYS[2], KEYS[1]), 1}",

    /* Release one hold, but the last leaves the lock to expire ARGV[2] ms
     * from now instead of deleting it (lw_unlock_after: a minimum hold,
     * ShedLock's lockAtLeastFor): the key and the field stay, so that
     * Redisson and every other client see it held until then.  Nothing
     * is published: the lock did not become free.  -1: not ours
     * (untouched); else the holds left, 0 for the last. */
    [SCRIPT_MIN_HOLD] =
        "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return -1 end "
        "if tonumber(redis.call('hget', KEYS[1], ARGV[1])) > 1 then "
        "  return redis.call('hincrby', KEYS[1], ARGV[1], -1) "
        "end "
        "redis.call('pexpire', KEYS[1], ARGV[2]) "
        "return 0",

    /* What the name holds, read only (lw_name_status; status.c decodes
     * it): {type, waiters} when free or of another type; {type, pttl,
     * hgetall, waiters} for a hash; {type, pttl, count, {id, ms left or
     * -1, ...}, waiters} for a string, a semaphore whose permits are the
     * zset KEYS[2] scored by expiry in epoch ms (922337203685477: never),
     * measured against Redis's clock.  waiters: a fair lock's queue
     * (KEYS[3], give-up times KEYS[4], places KEYS[5]), {field, ms to its
     * give-up time, ms to its place's end or 'none', ...} in order.  The
     * TYPE reply is a status, a table {ok = ...} in Lua. */
    [SCRIPT_STATUS] =
        "local now = redis.call('time') "
        "local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) "
        "local function left(score) "
        "  if score == false then return 'none' end "
        "  return string.format('%d', tonumber(score) - ms) "
        "end "
        "local waiters = {} "
        "for _, w in ipairs(redis.call('lrange', KEYS[3], 0, -1)) do "
        "  waiters[#waiters + 1] = w "
        "  waiters[#waiters + 1] = left(redis.call('zscore', KEYS[4], w)) "
        "  waiters[#waiters + 1] = left(redis.call('zscore', KEYS[5], w)) "
        "end "
        "local t = redis.call('type', KEYS[1]) "
        "t = type(t) == 'table' and t['ok'] or t "
        "if t == 'none' then return {t, waiters} end "
        "local r = {t, redis.call('pttl', KEYS[1])} "
        "if t == 'hash' then "
        "  r[3] = redis.call('hgetall', KEYS[1]) "
        "elseif t == 'string' then "
        "  local z = redis.call('zrange', KEYS[2], 0, -1, 'WITHSCORES') "
        "  for i = 2, #z, 2 do "
        "    local at = tonumber(z[i]) "
        "    z[i] = at >= 922337203685477 and '-1' or string.format('%d', at - ms) "
        "  end "
        "  r[3] = redis.call('get', KEYS[1]) "
        "  r[4] = z "
        "end "
        "r[#r + 1] = waiters "
        "return r",

    /* Delete whoever holds it.  1 when it was locked. */
    [SCRIPT_FORCE] =
        "if redis.call('del', KEYS[1]) == 1 then "
        "  redis.call(ARGV[1], KEYS[2], '0') "
        "  return 1 "
        "end "
        "return 0",

    /* Renew many locks in one call: KEYS[i] with field ARGV[i + 1].  One
     * result per key, 1 renewed or 0 not ours; a key of the wrong type
     * counts as not ours instead of failing the whole batch.  The layout
     * of 0.3 and lwbench's ceiling flood; the watchdog sends
     * SCRIPT_RENEW_OWNERS, the client id once a call. */
    [SCRIPT_RENEW] =
        "local renewed = {} "
        "for i = 1, #KEYS do "
        "  if redis.pcall('hexists', KEYS[i], ARGV[i + 1]) == 1 then "
        "    redis.call('pexpire', KEYS[i], ARGV[1]) "
        "    renewed[i] = 1 "
        "  else "
        "    renewed[i] = 0 "
        "  end "
        "end "
        "return renewed",

    /* Locks given up as lost, many in one call: KEYS[i] with owner
     * ARGV[i + 2], its field ARGV[2] .. ':' .. owner (ARGV[2]: the client
     * id).  Remove our field where it is still there, so that nobody waits
     * for a lease we no longer renew.  Returns how many were. */
    [SCRIPT_DROP] =
        LUA_CHANNEL_OF
            LUA_VACATE
    "local dropped = 0 "
    "for i = 1, #KEYS do "
    "  if redis.pcall('hdel', KEYS[i], ARGV[2] .. ':' .. ARGV[i + 2]) == 1 then "
    "    dropped = dropped + 1 "
    "    vacate(KEYS[i]) "
    "    if redis.call('exists', KEYS[i]) == 0 then "
    "      redis.call(ARGV[1], channel(KEYS[i]), '0') "
    "    end "
    "  end "
    "end "
    "return dropped",

    /* Cluster: drops of one node, whatever their slots, the names in ARGV
     * as SCRIPT_RENEW_OWNERS_NODE's (n names, the publish command, the
     * client id, n owners).  A name not served here is skipped: its lease
     * ends the field anyway. */
    [SCRIPT_DROP_NODE] =
        LUA_CHANNEL_OF
            LUA_VACATE
    "local n = (#ARGV - 2) / 2 "
    "local dropped = 0 "
    "for i = 1, n do "
    "  if redis.pcall('hdel', ARGV[i], ARGV[n + 2] .. ':' .. ARGV[n + 2 + i]) == 1 then "
    "    dropped = dropped + 1 "
    "    vacate(ARGV[i]) "
    "    if redis.call('exists', ARGV[i]) == 0 then "
    "      redis.call(ARGV[n + 1], channel(ARGV[i]), '0') "
    "    end "
    "  end "
    "end "
    "return dropped",

    /* Acquire n permits, all or none: {-1} when the semaphore does not
     * exist (its count was never set: failing beats waiting for ever);
     * {1, available after} when acquired, the ids scored with their
     * expiry (Redis's TIME + ARGV[2], the lease) and the zset given the
     * count's TTL, if any (as Redisson's); {0, ms} when too few are free:
     * how long until the permit due first expires, by Redis's clock, -1
     * when there is none or it never expires.  A copy sent again (its
     * connection lost: it may have run) finds its first id there and
     * answers {1, available} without taking more, its ids moved to a
     * lease from now, as a renewal moves them: the client counts their
     * lease from this copy's write. */
    [SCRIPT_SEM_ACQUIRE] =
        LUA_NOW
            LUA_SEM_RECLAIM
                LUA_RENEW_PERMIT
    "if redis.call('exists', KEYS[1]) == 0 then return {-1} end "
    "count() "
    "local now = now_ms() "
    "local expiry = string.format('%d', now + tonumber(ARGV[2])) "
    "reclaim(now, ARGV[3]) "
    "if redis.call('zscore', KEYS[2], ARGV[4]) then "
    "  for i = 4, #ARGV do renew_permit(KEYS[2], ARGV[i], expiry) end "
    "  return {1, count()} "
    "end "
    "local n = tonumber(ARGV[1]) "
    "if count() >= n then "
    "  local left = redis.call('decrby', KEYS[1], n) "
    "  for i = 4, #ARGV do redis.call('zadd', KEYS[2], expiry, ARGV[i]) end "
    "  local ttl = redis.call('pttl', KEYS[1]) "
    "  if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end "
    "  return {1, left} "
    "end "
    "local near = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES') "
    "if near[1] and near[2] ~= '922337203685477' then "
    "  return {0, math.max(0, tonumber(near[2]) - now)} "
    "end "
    "return {0, -1}",

    /* Release permits, all or none.  Expired ones are reclaimed first, so
     * an id past its expiry is gone by the check: -1 when any id is not
     * there (unknown, released, expired), nothing released; else the
     * count released, added to the count and the count published. */
    [SCRIPT_SEM_RELEASE] =
        LUA_NOW
            LUA_SEM_RECLAIM
    "if redis.call('exists', KEYS[1]) == 1 then count() end "
    "reclaim(now_ms(), ARGV[1]) "
    "for i = 2, #ARGV do "
    "  if redis.call('zscore', KEYS[2], ARGV[i]) == false then return -1 end "
    "end "
    "local removed = redis.call('zrem', KEYS[2], unpack(ARGV, 2)) "
    "local value = redis.call('incrby', KEYS[1], removed) "
    "redis.call(ARGV[1], KEYS[3], value) "
    "return removed",

    /* Create the semaphore with ARGV[1] permits if absent: 1, else 0. */
    [SCRIPT_SEM_TRY_SET] =
        "if redis.call('exists', KEYS[1]) == 1 then return 0 end "
        "redis.call('set', KEYS[1], ARGV[1]) "
        "redis.call(ARGV[2], KEYS[3], ARGV[1]) "
        "return 1",

    /* Make available + acquired = ARGV[1] (created so when absent), after
     * reclaiming; the total is published when it changed, as Redisson's
     * setPermits does. */
    [SCRIPT_SEM_SET] =
        LUA_NOW
            LUA_SEM_RECLAIM
    "if redis.call('exists', KEYS[1]) == 0 then "
    "  redis.call('set', KEYS[1], ARGV[1]) "
    "  redis.call(ARGV[2], KEYS[3], ARGV[1]) "
    "  return 1 "
    "end "
    "count() "
    "reclaim(now_ms(), ARGV[2]) "
    "local total = redis.call('zcard', KEYS[2]) + count() "
    "if total ~= tonumber(ARGV[1]) then "
    "  redis.call('incrby', KEYS[1], tonumber(ARGV[1]) - total) "
    "  redis.call(ARGV[2], KEYS[3], ARGV[1]) "
    "end "
    "return 0",

    /* Add ARGV[1] (may be negative) to the count, created at it when
     * absent; a positive delta is published.  The count after. */
    [SCRIPT_SEM_ADD] =
        "local value = redis.call('incrby', KEYS[1], ARGV[1]) "
        "if tonumber(ARGV[1]) > 0 then redis.call(ARGV[2], KEYS[3], ARGV[1]) end "
        "return value",

    /* {-1} when absent; else, after reclaiming, {1, available,
     * acquired}. */
    [SCRIPT_SEM_COUNTS] =
        LUA_NOW
            LUA_SEM_RECLAIM
    "if redis.call('exists', KEYS[1]) == 0 then return {-1} end "
    "count() "
    "reclaim(now_ms(), ARGV[1]) "
    "return {1, count(), redis.call('zcard', KEYS[2])}",
    /* Renew many locks in one call, the watchdog's: KEYS[i] with owner
     * ARGV[i + 2], its field built here, ARGV[2] .. ':' .. owner (ARGV[2]:
     * the client id, sent once a call instead of in every field).  One
     * result per key, as SCRIPT_RENEW's. */
    [SCRIPT_RENEW_OWNERS] =
        LUA_STAMPED
    "local renewed = {} "
    "for i = 1, #KEYS do "
    "  if redis.pcall('hexists', KEYS[i], ARGV[2] .. ':' .. ARGV[i + 2]) == 1 then "
    "    redis.call('pexpire', KEYS[i], ARGV[1]) "
    "    renewed[i] = 1 "
    "  else "
    "    renewed[i] = 0 "
    "  end "
    "end "
    "return stamped(renewed)",

    /* Cluster: renew many locks of one node, whatever their slots.  The
     * names come in ARGV (n names, the lease, the client id, n owners), for
     * declared keys would have to share one slot; an old-style script may
     * touch keys of any slot its node serves.  Per name: 1 renewed, 0 not
     * ours, -1 not served here (a slot moved away or migrating: redis.pcall
     * turns the cluster's refusal into an error table) to be sent again on
     * its own, routed by its slot.  A key of the wrong type is not ours. */
    [SCRIPT_RENEW_OWNERS_NODE] =
        LUA_STAMPED
            LUA_NOT_RENEWED
    "local n = (#ARGV - 2) / 2 "
    "local renewed = {} "
    "for i = 1, n do "
    "  local r = redis.pcall('hexists', ARGV[i], ARGV[n + 2] .. ':' .. ARGV[n + 2 + i]) "
    "  if r == 1 then "
    "    redis.call('pexpire', ARGV[i], ARGV[n + 1]) "
    "    renewed[i] = 1 "
    "  else "
    "    renewed[i] = not_renewed(r) "
    "  end "
    "end "
    "return stamped(renewed)",

    /* Renew read holds of read-write locks (kind_read.c), Redisson's
     * layout: per hold, KEYS the hash and its timeout keys 1..count, ARGV
     * its owner and count after the lease and the client id (the field:
     * id .. ':' .. owner).  Each timeout key to the lease, the hash to
     * max(PTTL, lease) (stretch(): another reader may hold a longer one).
     * 1 renewed, 0 the field is gone (or the key is of another type). */
    [SCRIPT_RENEW_READ] =
        LUA_STAMPED
            LUA_STRETCH_HASH
    "local lease = ARGV[1] "
    "local renewed = {} "
    "local k, n = 1, 0 "
    "for i = 3, #ARGV, 2 do "
    "  local holds, name = tonumber(ARGV[i + 1]), KEYS[k] "
    "  n = n + 1 "
    "  if redis.pcall('hexists', name, ARGV[2] .. ':' .. ARGV[i]) == 1 then "
    "    for j = 1, holds do redis.call('pexpire', KEYS[k + j], lease) end "
    "    if not stretched[name] then stretch(name, lease) end "
    "    renewed[n] = 1 "
    "  else "
    "    renewed[n] = 0 "
    "  end "
    "  k = k + 1 + holds "
    "end "
    "return stamped(renewed)",

    /* Cluster: read holds of one node, the names in ARGV (n names, the
     * lease, the client id, per name its owner and count); the timeout
     * keys' names built by Redisson's suffixName rule.  -1: not served
     * here, as above. */
    [SCRIPT_RENEW_READ_NODE] =
        LUA_TAG
            LUA_STAMPED
                LUA_STRETCH_HASH
                    LUA_NOT_RENEWED
    "local n = (#ARGV - 2) / 3 "
    "local lease = ARGV[n + 1] "
    "local renewed = {} "
    "for i = 1, n do "
    "  local name = ARGV[i] "
    "  local field = ARGV[n + 2] .. ':' .. ARGV[n + 1 + 2 * i] "
    "  local r = redis.pcall('hexists', name, field) "
    "  if r == 1 then "
    "    local prefix = tag(name) "
    "    for j = 1, tonumber(ARGV[n + 2 + 2 * i]) do "
    "      redis.call('pexpire', prefix .. ':' .. field .. ':rwlock_timeout:' .. j, lease) "
    "    end "
    "    if not stretched[name] then stretch(name, lease) end "
    "    renewed[i] = 1 "
    "  else "
    "    renewed[i] = not_renewed(r) "
    "  end "
    "end "
    "return stamped(renewed)",

    /* Read-write locks, in Redisson's layout (RedissonReadLock,
     * RedissonWriteLock): the hash at the name with `mode` read or write,
     * a reader's field "<id>:<owner>" = its holds, each hold i with the key
     * "<timeout prefix>:<i>" ("{name}:<field>:rwlock_timeout:<i>") holding
     * that hold's lease, a writer's field "<id>:<owner>:write".  Replies as
     * the lock's scripts': {token, holds}, the PTTL, {-1} for a name that
     * holds a plain lock (no `mode`: nothing is added to it, where
     * Redisson's scripts add `mode` to an RLock hash). */

    /* Read acquire: free, or read, or write held by the caller (a
     * downgrade): one hold more, its timeout key, the hash to max(PTTL,
     * lease).  Reads have no token (0).  The caller's field whose timeout
     * keys have all expired holds nothing: its holds were lost (and
     * reported) while other readers kept the hash alive, and nobody
     * removes a dead reader's field.  It is dropped first, so that this
     * is a first hold again: counting on from it would leave the count
     * above the keys, a field our watchdog would renew after the caller's
     * last release, holding the lock for ever. */
    [SCRIPT_READ_LOCK] =
        LUA_MUST_BE_LOCK
    "local mode = redis.call('hget', KEYS[1], 'mode') "
    "if mode == false then "
    "  if redis.call('exists', KEYS[1]) == 1 then "
    "    must_be_lock(KEYS[1]) "
    "    return {-1} "
    "  end "
    "  redis.call('hset', KEYS[1], 'mode', 'read') "
    "  redis.call('hset', KEYS[1], ARGV[2], 1) "
    "  redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1]) "
    "  redis.call('pexpire', KEYS[1], ARGV[1]) "
    "  return {0, 1} "
    "end "
    "if mode == 'read' or (mode == 'write' and "
    "    redis.call('hexists', KEYS[1], ARGV[3]) == 1) then "
    "  local held = tonumber(redis.call('hget', KEYS[1], ARGV[2])) "
    "  if held then "
    "    local alive = false "
    "    for i = 1, held do "
    "      if redis.call('exists', KEYS[2] .. ':' .. i) == 1 then alive = true break end "
    "    end "
    "    if not alive then redis.call('hdel', KEYS[1], ARGV[2]) end "
    "  end "
    "  local holds = redis.call('hincrby', KEYS[1], ARGV[2], 1) "
    "  redis.call('set', KEYS[2] .. ':' .. holds, 1, 'px', ARGV[1]) "
    "  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then "
    "    redis.call('pexpire', KEYS[1], ARGV[1]) "
    "  end "
    "  return {0, holds} "
    "end "
    "must_be_rw(mode) "
    "return redis.call('pttl', KEYS[1])",

    /* Read release, as Redisson's: the released hold's timeout key goes,
     * then the hash lives as long as the longest timeout key of any reader
     * (or stays for its writer); with none, it goes and `0` is published.
     * The holds left, or -1 (not ours). */
    [SCRIPT_READ_UNLOCK] =
        "local mode = redis.call('hget', KEYS[1], 'mode') "
        "if mode == false or redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return -1 end "
        "local left = redis.call('hincrby', KEYS[1], ARGV[1], -1) "
        "if left == 0 then redis.call('hdel', KEYS[1], ARGV[1]) end "
        "redis.call('del', KEYS[3] .. ':' .. (left + 1)) "
        "if redis.call('hlen', KEYS[1]) > 1 then "
        "  local longest = -3 "
        "  for _, field in ipairs(redis.call('hkeys', KEYS[1])) do "
        "    local n = tonumber(redis.call('hget', KEYS[1], field)) "
        "    if type(n) == 'number' then "
        "      for i = n, 1, -1 do "
        "        longest = math.max(longest, "
        "          redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i)) "
        "      end "
        "    end "
        "  end "
        "  if longest > 0 then "
        "    redis.call('pexpire', KEYS[1], longest) "
        "    return left "
        "  end "
        "  if mode == 'write' then return left end "
        "end "
        "redis.call('del', KEYS[1]) "
        "redis.call(ARGV[2], KEYS[2], '0') "
        "return left",

    /* Write acquire: free, or the caller's own re-entry (the lease only
     * lengthened, as a lock's).  A first one draws the name's next fencing
     * token (draw_token()).  {-3}: the caller reads this lock (no upgrade: it would wait on
     * itself). */
    [SCRIPT_WRITE_LOCK] =
        LUA_EFFECTS
            LUA_TOKEN
                LUA_MUST_BE_LOCK
    "local mode = redis.call('hget', KEYS[1], 'mode') "
    "if mode == false then "
    "  if redis.call('exists', KEYS[1]) == 1 then "
    "    must_be_lock(KEYS[1]) "
    "    return {-1} "
    "  end "
    "  redis.call('hset', KEYS[1], 'mode', 'write') "
    "  redis.call('hset', KEYS[1], ARGV[2], 1) "
    "  redis.call('pexpire', KEYS[1], ARGV[1]) "
    "  return {draw_token(KEYS[2], KEYS[1]), 1} "
    "end "
    "if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "
    "  local holds = redis.call('hincrby', KEYS[1], ARGV[2], 1) "
    "  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then "
    "    redis.call('pexpire', KEYS[1], ARGV[1]) "
    "  end "
    "  return {token_of(KEYS[2], KEYS[1]), holds} "
    "end "
    "must_be_rw(mode) "
    "if redis.call('hexists', KEYS[1], ARGV[3]) == 1 then return {-3} end "
    "return redis.call('pttl', KEYS[1])",

    /* Write release: at the last hold the field goes; the hash too when
     * only `mode` is left, else `mode` turns read (the owner still reads).
     * `1` is published either way (Redisson publishes nothing in the
     * second case, leaving its waiters on their timers).  The holds left,
     * or -1 (not ours).  A partial release leaves the lease alone. */
    [SCRIPT_WRITE_UNLOCK] =
        "if redis.call('hget', KEYS[1], 'mode') ~= 'write' or "
        "   redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return -1 end "
        "local left = redis.call('hincrby', KEYS[1], ARGV[1], -1) "
        "if left > 0 then return left end "
        "redis.call('hdel', KEYS[1], ARGV[1]) "
        "if redis.call('hlen', KEYS[1]) == 1 then "
        "  redis.call('del', KEYS[1]) "
        "else "
        "  redis.call('hset', KEYS[1], 'mode', 'read') "
        "end "
        "redis.call(ARGV[2], KEYS[2], '1') "
        "return 0",

    /* Force-release a read-write lock held in mode ARGV[1], as Redisson's
     * forceUnlock: delete it and publish ARGV[3].  1 when it was. */
    [SCRIPT_RW_FORCE] =
        "if redis.call('hget', KEYS[1], 'mode') == ARGV[1] then "
        "  redis.call('del', KEYS[1]) "
        "  redis.call(ARGV[2], KEYS[2], ARGV[3]) "
        "  return 1 "
        "end "
        "return 0",

    /* Whether the read (ARGV[1] 'read') or write lock is held, as
     * Redisson's isLocked: the read lock also when the writer reads. */
    [SCRIPT_RW_IS_LOCKED] =
        "local mode = redis.call('hget', KEYS[1], 'mode') "
        "if mode == ARGV[1] then return 1 end "
        "if ARGV[1] == 'read' and mode == 'write' and redis.call('hlen', KEYS[1]) > 2 then "
        "  return 1 "
        "end "
        "return 0",

    /* Renew permits (kind_permit.c): KEYS per permit its semaphore's name
     * and timeout key; ARGV the lease, the client id (unused), the
     * publish command, then per permit its id.  Each semaphore reclaimed
     * once by Redis's TIME, then per permit 1 renewed (its score Redis's
     * TIME + the lease, or later), 0 lost (gone, expired: reclaimed here;
     * or a key of another type); then Redis's time (stamped()). */
    [SCRIPT_RENEW_PERMIT] =
        LUA_RENEW_PERMITS
    "local now = now_ms() "
    "local expiry = string.format('%d', now + tonumber(ARGV[1])) "
    "local state, renewed = {}, {} "
    "for i = 1, #KEYS / 2 do "
    "  local name, timeout = KEYS[2 * i - 1], KEYS[2 * i] "
    "  local s = state[name] "
    "  if s == nil then "
    "    s = reclaim_expired(name, timeout, now, ARGV[3]) "
    "    state[name] = s "
    "  end "
    "  if s == 1 then s = renew_permit(timeout, ARGV[3 + i], expiry) end "
    "  renewed[i] = s "
    "end "
    "return stamped(renewed)",

    /* Cluster: permits of one node: ARGV n names, the lease, the client id,
     * the publish command, n ids.  -1: not served here. */
    [SCRIPT_RENEW_PERMIT_NODE] =
        LUA_RENEW_PERMITS
    "local n = (#ARGV - 3) / 2 "
    "local now = now_ms() "
    "local expiry = string.format('%d', now + tonumber(ARGV[n + 1])) "
    "local state, renewed = {}, {} "
    "for i = 1, n do "
    "  local name = ARGV[i] "
    "  local timeout = tag(name) .. ':timeout' "
    "  local s = state[name] "
    "  if s == nil then "
    "    s = reclaim_expired(name, timeout, now, ARGV[n + 3]) "
    "    state[name] = s "
    "  end "
    "  if s == 1 then s = renew_permit(timeout, ARGV[n + 3 + i], expiry) end "
    "  renewed[i] = s "
    "end "
    "return stamped(renewed)",

    /* Acquire a fair lock, or take a place in its queue (ARGV[6] 1), or
     * only try (0: no place; Redisson's tryLock() without a wait).  The
     * stale head dropped first, and the new one woken when the lock is
     * free.  The lock is free to take when nobody holds it and the queue
     * is empty or headed by us: then we leave the queue, everyone's
     * give-up time moves up by the wait (Redisson's rule: one place
     * less to wait for), and we hold it as a lock (one hold, the lease,
     * the next fencing token): {token, 1}.  A re-entry: {token, holds}.
     * {-1}: the name is a read-write lock's.  Else we stay in the queue or
     * join its tail, our give-up time Redisson's (the last waiter's, or
     * the lock's PTTL, + the wait), then both it and our place kept by
     * Redis's clock (keep(): the give-up time as our place in line
     * needs), and the
     * answer is when to look again unless woken: the head, at the lock's
     * PTTL (-1: it has no TTL, wait for the message); any other, when the
     * head can be dropped, its give-up time or its place's end.  A try
     * answers the lock's PTTL. */
    [SCRIPT_FAIR_LOCK] =
        LUA_FAIR
            LUA_TOKEN
                LUA_MUST_BE_LOCK
                    LUA_FAIR_ACQUIRE("  redis.call('hincrby', KEYS[1], me, 1) "
                                     "  redis.call('pexpire', KEYS[1], ARGV[1]) "
                                     "  return {draw_token(KEYS[5], KEYS[1]), 1} ",
                                     "token_of(KEYS[5], KEYS[1])"),

    /* Leave a fair lock's queue (a waiter that gives up), as Redisson's
     * acquireFailed: the give-up times behind us move up by the wait, we
     * go from the queue, the give-up times and the places; and when we
     * headed it, the next is woken if the lock is free. */
    [SCRIPT_FAIR_LEAVE] =
        LUA_FAIR
    "local queue = redis.call('lrange', KEYS[2], 0, -1) "
    "local i = 1 "
    "while i <= #queue and queue[i] ~= ARGV[1] do i = i + 1 end "
    "for j = i + 1, #queue do "
    "  redis.call('zincrby', KEYS[3], -tonumber(ARGV[2]), queue[j]) "
    "end "
    "redis.call('zrem', KEYS[3], ARGV[1]) "
    "redis.call('zrem', KEYS[4], ARGV[1]) "
    "redis.call('lrem', KEYS[2], 0, ARGV[1]) "
    "if i == 1 then wake(ARGV[3], ARGV[4]) end "
    "return i <= #queue and 1 or 0",

    /* Release one hold of a fair lock, as SCRIPT_UNLOCK does a lock's (-1:
     * not ours, untouched; else the holds left), but the last wakes the
     * queue's head on its own channel, as Redisson's unlock does. */
    [SCRIPT_FAIR_UNLOCK] =
        LUA_FAIR
            LUA_FAIR_RELEASE("", ""),

    /* Delete a fair lock whoever holds it, and wake the queue's head: 1
     * when it was locked. */
    [SCRIPT_FAIR_FORCE] =
        LUA_FAIR
    "prune(now_ms()) "
    "local held = redis.call('del', KEYS[1]) "
    "wake(ARGV[2], ARGV[1]) "
    "return held",

    /* Renew waiters' places (kind_place.c): KEYS per waiter its lock's
     * give-up times, places and queue; ARGV the place lease, the client
     * id, the wait, then per waiter its owner.  1 in the queue still
     * (kept: keep()), 0 gone; then Redis's time (stamped()). */
    [SCRIPT_RENEW_PLACE] =
        LUA_RENEW_PLACES
    "local now, place_ms, wait = now_ms(), tonumber(ARGV[1]), tonumber(ARGV[3]) "
    "local renewed = {} "
    "for i = 1, #KEYS / 3 do "
    "  renewed[i] = renew_place(KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i], "
    "                           ARGV[2] .. ':' .. ARGV[3 + i], now, place_ms, wait) "
    "end "
    "return stamped(renewed)",

    /* Cluster: places of one node: ARGV n names, then as above.  -1: the
     * node does not serve the name (sent again on its own). */
    [SCRIPT_RENEW_PLACE_NODE] =
        LUA_TAG
            LUA_RENEW_PLACES
                LUA_NOT_RENEWED
    "local n = (#ARGV - 3) / 2 "
    "local now, place_ms, wait = now_ms(), tonumber(ARGV[n + 1]), tonumber(ARGV[n + 3]) "
    "local renewed = {} "
    "for i = 1, n do "
    "  local tagged = tag(ARGV[i]) "
    "  local t, field = '" FAIR_TIMEOUT_PREFIX ":' .. tagged, ARGV[n + 2] .. ':' .. ARGV[n + 3 + i] "
    "  local r = redis.pcall('zscore', t, field) "
    "  if type(r) == 'table' and r.err then "
    "    renewed[i] = not_renewed(r) "
    "  elseif r == false then "
    "    renewed[i] = 0 "
    "  else "
    "    renewed[i] = renew_place(t, '" FAIR_PLACE_PREFIX ":' .. tagged, "
    "                             '" FAIR_QUEUE_PREFIX ":' .. tagged, field, now, place_ms, wait) "
    "  end "
    "end "
    "return stamped(renewed)",

    /* A multi-lock's group: every name free or the caller's, then each
     * taken as the lock's or the write lock's own acquire takes it
     * (SCRIPT_LOCK, SCRIPT_WRITE_LOCK: the same hash, field, hold count,
     * lease and fencing token), or none.  Nothing is written before
     * every name has been looked at, so a refusal, or an error (a name
     * holding another type), leaves all as they were.  {1, token, holds,
     * ...} per name; {0, i, pttl}: name i held by another; {-1, i}: name
     * i is the other kind of lock; {-3, i}: the caller reads name i. */
    [SCRIPT_MULTI_LOCK] =
        LUA_EFFECTS
            LUA_TOKEN
                LUA_MUST_BE_LOCK
    "local lease, field, n = ARGV[1], ARGV[2], #KEYS / 2 "
    "for i = 1, n do "
    "  local name = KEYS[2 * i - 1] "
    "  if ARGV[2 + i] == 'w' then "
    "    local mode = redis.call('hget', name, 'mode') "
    "    if mode == false then "
    "      if redis.call('exists', name) == 1 then "
    "        must_be_lock(name) "
    "        return {-1, i} "
    "      end "
    "    elseif not (mode == 'write' and redis.call('hexists', name, field .. ':write') == 1) then "
    "      must_be_rw(mode) "
    "      if redis.call('hexists', name, field) == 1 then return {-3, i} end "
    "      return {0, i, redis.call('pttl', name)} "
    "    end "
    "  elseif redis.call('exists', name) == 1 then "
    "    local mode = redis.call('hget', name, 'mode') "
    "    if mode then "
    "      must_be_rw(mode) "
    "      return {-1, i} "
    "    end "
    "    if redis.call('hexists', name, field) == 0 then "
    "      must_be_lock(name) "
    "      return {0, i, redis.call('pttl', name)} "
    "    end "
    "  end "
    "end "
    "local r = {1} "
    "for i = 1, n do "
    "  local name, token, f = KEYS[2 * i - 1], KEYS[2 * i], field "
    "  if ARGV[2 + i] == 'w' then "
    "    f = field .. ':write' "
    "    redis.call('hset', name, 'mode', 'write') "
    "  end "
    "  local holds = redis.call('hincrby', name, f, 1) "
    "  if holds == 1 then "
    "    redis.call('pexpire', name, lease) "
    "    r[#r + 1] = draw_token(token, name) "
    "  else "
    "    if redis.call('pttl', name) < tonumber(lease) then "
    "      redis.call('pexpire', name, lease) "
    "    end "
    "    r[#r + 1] = token_of(token, name) "
    "  end "
    "  r[#r + 1] = holds "
    "end "
    "return r",

    /* A multi-lock's group given back, released or trimmed: count holds
     * of each name less, as the lock's or the write lock's own release
     * (SCRIPT_UNLOCK, SCRIPT_WRITE_UNLOCK) takes one, publishing when the
     * last goes.  The holds left per name, -1 where the caller held
     * none. */
    [SCRIPT_MULTI_RELEASE] =
        "local field, publish, n = ARGV[1], ARGV[2], #KEYS / 2 "
        "local left = {} "
        "for i = 1, n do "
        "  local name, channel = KEYS[2 * i - 1], KEYS[2 * i] "
        "  local write, count = ARGV[1 + 2 * i] == 'w', tonumber(ARGV[2 + 2 * i]) "
        "  local f = field "
        "  if write then f = field .. ':write' end "
        "  if (write and redis.call('hget', name, 'mode') ~= 'write') or "
        "     redis.call('hexists', name, f) == 0 then "
        "    left[i] = -1 "
        "  else "
        "    left[i] = redis.call('hincrby', name, f, -count) "
        "    if left[i] <= 0 then "
        "      left[i] = 0 "
        "      if not write then "
        "        redis.call('del', name) "
        "        redis.call(publish, channel, '0') "
        "      else "
        "        redis.call('hdel', name, f) "
        "        if redis.call('hlen', name) == 1 then "
        "          redis.call('del', name) "
        "        else "
        "          redis.call('hset', name, 'mode', 'read') "
        "        end "
        "        redis.call(publish, channel, '1') "
        "      end "
        "    end "
        "  end "
        "end "
        "return left",

    /* Campaign: the lock's acquire (SCRIPT_LOCK's), and a first acquire
     * is elected: the next term from the counter (a fencing token's,
     * seeded at Redis's clock when missing, so terms rise across a Redis
     * that lost its data), written with the value into the lock's own
     * hash, so that whatever removes the lock (an unlock, its lease
     * running out, Redisson's forceUnlock, DEL) removes them with it; and
     * "elected <term> <field>" on the election's channel.  {term, 1}
     * elected; {term, holds} the caller leads already; the holder's PTTL
     * when another holds it (a candidate, or a Redisson RLock); {-1} a
     * read-write lock's name. */
    [SCRIPT_ELECT] =
        LUA_EFFECTS
            LUA_TOKEN
                LUA_MUST_BE_LOCK
    "if redis.call('exists', KEYS[1]) == 0 then "
    "  local term = draw_token(KEYS[2], KEYS[1]) "
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1) "
    "  redis.call('hset', KEYS[1], '" ELECT_TERM_FIELD "', term) "
    "  redis.call('hset', KEYS[1], '" ELECT_VALUE_FIELD "', ARGV[3]) "
    "  redis.call('pexpire', KEYS[1], ARGV[1]) "
    "  redis.call(ARGV[4], KEYS[3], 'elected ' .. term .. ' ' .. ARGV[2]) "
    "  return {term, 1} "
    "end " LUA_LOCK_TAKEN("tonumber(redis.call('hget', KEYS[1], '" ELECT_TERM_FIELD "') or '0')"),

    /* A campaign in the fair lock's queue: SCRIPT_FAIR_LOCK's acquire
     * (its keys and arguments, KEYS[5] the term counter), whose taking
     * also writes the term and the value (ARGV[8]) and says "elected" on
     * the election's channel (KEYS[6]), as SCRIPT_ELECT does; a re-entry
     * reads the term. */
    [SCRIPT_ELECT_FAIR] =
        LUA_FAIR
            LUA_TOKEN
                LUA_MUST_BE_LOCK
                    LUA_FAIR_ACQUIRE("  local term = draw_token(KEYS[5], KEYS[1]) "
                                     "  redis.call('hincrby', KEYS[1], me, 1) "
                                     "  redis.call('hset', KEYS[1], '" ELECT_TERM_FIELD "', term) "
                                     "  redis.call('hset', KEYS[1], '" ELECT_VALUE_FIELD "', ARGV[8]) "
                                     "  redis.call('pexpire', KEYS[1], ARGV[1]) "
                                     "  redis.call(ARGV[5], KEYS[6], 'elected ' .. term .. ' ' .. me) "
                                     "  return {term, 1} ",
                                     "tonumber(redis.call('hget', KEYS[1], '" ELECT_TERM_FIELD "') or '0')"),

    /* A resign in the fair lock's queue: SCRIPT_FAIR_UNLOCK's (its keys
     * and arguments), the last hold going with the term and the value,
     * the queue's head woken, Redisson's unlock message on the lock's
     * channel (for the candidates that do not queue, and Redisson RLock
     * waiters), and "resigned <term>" on the election's channel
     * (KEYS[5]). */
    [SCRIPT_RESIGN_FAIR] =
        LUA_FAIR
            LUA_FAIR_RELEASE("local term = redis.call('hget', KEYS[1], '" ELECT_TERM_FIELD "') or '0' ",
                             "redis.call(ARGV[2], ARGV[3], '0') "
                             "redis.call(ARGV[2], KEYS[5], 'resigned ' .. term) "),

    /* Resign: the lock's unlock (SCRIPT_UNLOCK's), and when the last hold
     * goes, the term and the value with it, "resigned <term>" on the
     * election's channel as well as Redisson's 0 on the lock's.  The holds
     * left, or -1 (not the caller's: untouched). */
    [SCRIPT_RESIGN] =
        "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return -1 end "
        "local holds = redis.call('hincrby', KEYS[1], ARGV[1], -1) "
        "if holds > 0 then return holds end "
        "local term = redis.call('hget', KEYS[1], '" ELECT_TERM_FIELD "') or '0' "
        "redis.call('del', KEYS[1]) "
        "redis.call(ARGV[2], KEYS[2], '0') "
        "redis.call(ARGV[2], KEYS[3], 'resigned ' .. term) "
        "return 0",

    /* Proclaim: a new value, only while the caller still holds the term
     * it was elected for (etcd's compare on the creation revision).  1,
     * with "proclaimed <term>" on the election's channel; 0 when the
     * caller does not lead in that term (nothing written). */
    [SCRIPT_PROCLAIM] =
        "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 or "
        "   redis.call('hget', KEYS[1], '" ELECT_TERM_FIELD "') ~= ARGV[2] then "
        "  return 0 "
        "end "
        "redis.call('hset', KEYS[1], '" ELECT_VALUE_FIELD "', ARGV[3]) "
        "redis.call(ARGV[4], KEYS[2], 'proclaimed ' .. ARGV[2]) "
        "return 1",

    /* Who leads, in one read: {} when nobody holds the name; else {term,
     * leader's field, value, PTTL}, term 0 and value '' when the holder
     * is a lock that was not elected (a Redisson RLock, a plain lock).
     * A read-write lock's name: {-1}. */
    [SCRIPT_LEADER] =
        "local f = redis.call('hgetall', KEYS[1]) "
        "if #f == 0 then return {} end "
        "local term, value, leader = 0, '', '' "
        "for i = 1, #f, 2 do "
        "  if f[i] == '" ELECT_TERM_FIELD "' then term = tonumber(f[i + 1]) "
        "  elseif f[i] == '" ELECT_VALUE_FIELD "' then value = f[i + 1] "
        "  elseif f[i] == 'mode' then return {-1} "
        "  else leader = f[i] end "
        "end "
        "return {term, leader, value, redis.call('pttl', KEYS[1])}",
};
/* clang-format on */
