// The fair-share Lua script (docs/operations.md "Fair share of an endpoint"): one endpoint's
// in-flight capacity (sequences, vLLM's --max-num-seqs × replicas) shared by weight among the
// runs using it, across every worker process. Each call reaps expired leases and waiters (a
// worker that died stops renewing them, so its capacity comes back within one lease TTL),
// computes each run's allocation by weighted max-min fairness (water-filling: a run that wants
// less than its weighted share gets what it wants and the rest is split by weight among the
// others, so no capacity idles while anyone waits), and grants the caller's head request when
// the endpoint has room and its run stays within its allocation (a run holding nothing may
// always take one request, so a share smaller than one request's `n` never starves it).
// Time is the server's (TIME), so workers' clocks do not matter.
//
// Keys (fair-share.ts `fairShareKeys`): leases (zset id -> expiry ms), owners (hash id ->
// "run units"), waiters (zset waiter -> expiry ms), wanted (hash waiter -> "run queued"),
// weights (hash run -> weight), used (hash run -> units held), served (hash "<run>:<field>").

const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/** Drops expired leases (giving their units back) and expired waiters. */
const REAP = `
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for _, id in ipairs(expired) do
  local owner = redis.call('HGET', KEYS[2], id)
  if owner then
    local r, u = string.match(owner, '^(.*) (%d+)$')
    if redis.call('HINCRBY', KEYS[6], r, -tonumber(u)) <= 0 then redis.call('HDEL', KEYS[6], r) end
    redis.call('HDEL', KEYS[2], id)
  end
end
if #expired > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) end
local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for _, id in ipairs(gone) do redis.call('HDEL', KEYS[4], id) end
if #gone > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now) end
`;

/** KEYS: leases, owners, waiters, wanted, weights, used.
 * ARGV: ttlMs, capacity, run, weight, waiter, queued (units the waiter has queued), lease id
 * prefix, then the units of its first queued requests, head first.
 * Grants those requests in order while they fit (leases `<prefix>:1`, `<prefix>:2`, …).
 * Returns {requests granted, allocation of the run (string), units held on the endpoint}. */
export const FAIR_ACQUIRE = `${NOW}${REAP}
local ttl = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local run, weight, waiter = ARGV[3], ARGV[4], ARGV[5]
local queued = tonumber(ARGV[6])
redis.call('HSET', KEYS[5], run, weight)
redis.call('ZADD', KEYS[3], now + ttl, waiter)
redis.call('HSET', KEYS[4], waiter, run .. ' ' .. queued)

local demand, total = {}, 0
local used = redis.call('HGETALL', KEYS[6])
for i = 1, #used, 2 do
  local u = tonumber(used[i + 1])
  demand[used[i]] = u
  total = total + u
end
local wanted = redis.call('HGETALL', KEYS[4])
for i = 1, #wanted, 2 do
  local r, q = string.match(wanted[i + 1], '^(.*) (%d+)$')
  demand[r] = (demand[r] or 0) + tonumber(q)
end
local weights = {}
local known = redis.call('HGETALL', KEYS[5])
for i = 1, #known, 2 do
  if demand[known[i]] then weights[known[i]] = tonumber(known[i + 1])
  else redis.call('HDEL', KEYS[5], known[i]) end
end

-- Weighted max-min fairness: cap the runs that want less than their share, split the rest.
local alloc, active, remaining = {}, {}, capacity
for r, d in pairs(demand) do
  if d > 0 then active[r] = true end
end
while true do
  local sum = 0
  for r in pairs(active) do sum = sum + (weights[r] or 1) end
  if sum == 0 then break end
  local capped = {}
  for r in pairs(active) do
    if demand[r] <= remaining * (weights[r] or 1) / sum then capped[#capped + 1] = r end
  end
  if #capped == 0 then
    for r in pairs(active) do alloc[r] = remaining * (weights[r] or 1) / sum end
    break
  end
  for _, r in ipairs(capped) do
    alloc[r] = demand[r]
    remaining = remaining - demand[r]
    active[r] = nil
  end
end

local held = tonumber(redis.call('HGET', KEYS[6], run) or '0')
local mine = alloc[run] or 0
local granted = 0
for i = 8, #ARGV do
  local units = tonumber(ARGV[i])
  if total + units > capacity or (held + units > mine + 1e-9 and held > 0) then break end
  local lease = ARGV[7] .. ':' .. (i - 7)
  redis.call('ZADD', KEYS[1], now + ttl, lease)
  redis.call('HSET', KEYS[2], lease, run .. ' ' .. units)
  redis.call('HINCRBY', KEYS[6], run, units)
  held, total, queued, granted = held + units, total + units, queued - units, granted + 1
end
if queued > 0 then
  redis.call('HSET', KEYS[4], waiter, run .. ' ' .. queued)
else
  redis.call('HDEL', KEYS[4], waiter)
  redis.call('ZREM', KEYS[3], waiter)
end
return {granted, tostring(mine), total}
`;

/** KEYS: leases, owners, waiters, wanted, weights, used, served, the run's hash.
 * ARGV: endpoint, run, waiter ('' for none: withdrawn when its queue is empty), lease ('' for
 * none), tokens, waitedMs. A lease still held is given back and counted in `served` (per run and
 * the endpoint's `:total`), and the run's record gets its `fleetShare` on the endpoint (its
 * tokens over the endpoint's since its first request). Returns {1 if the lease was held}. */
export const FAIR_RELEASE = `${NOW}${REAP}
local endpoint, run = ARGV[1], ARGV[2]
if ARGV[3] ~= '' then
  redis.call('HDEL', KEYS[4], ARGV[3])
  redis.call('ZREM', KEYS[3], ARGV[3])
end
local owner = ARGV[4] ~= '' and redis.call('HGET', KEYS[2], ARGV[4])
if not owner then return {0} end
local r, u = string.match(owner, '^(.*) (%d+)$')
if redis.call('HINCRBY', KEYS[6], r, -tonumber(u)) <= 0 then redis.call('HDEL', KEYS[6], r) end
redis.call('HDEL', KEYS[2], ARGV[4])
redis.call('ZREM', KEYS[1], ARGV[4])
local tokens = tonumber(ARGV[5])
local requests = redis.call('HINCRBY', KEYS[7], r .. ':requests', 1)
redis.call('HINCRBY', KEYS[7], r .. ':units', tonumber(u))
local mine = redis.call('HINCRBY', KEYS[7], r .. ':tokens', tokens)
local waited = redis.call('HINCRBY', KEYS[7], r .. ':waitedMs', tonumber(ARGV[6]))
local total = redis.call('HINCRBY', KEYS[7], ':total:tokens', tokens)
redis.call('HSETNX', KEYS[7], r .. ':base', total - tokens)
local since = total - tonumber(redis.call('HGET', KEYS[7], r .. ':base'))
if r == run and redis.call('EXISTS', KEYS[8]) == 1 then
  local shares = cjson.decode(redis.call('HGET', KEYS[8], 'fleetShare') or '{}')
  shares[endpoint] = {
    weight = tonumber(redis.call('HGET', KEYS[5], r) or '1'),
    requests = requests, tokens = mine, waitedSeconds = waited / 1000,
    tokenShare = since > 0 and mine / since or 0,
  }
  redis.call('HSET', KEYS[8], 'fleetShare', cjson.encode(shares))
end
return {1}
`;

/** KEYS: leases, waiters. ARGV: ttlMs, then ids (leases and waiters of one process).
 * Pushes their expiry on; an id already reaped stays gone (ZADD XX). */
export const FAIR_RENEW = `${NOW}
local expiry = now + tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', expiry, ARGV[i])
  redis.call('ZADD', KEYS[2], 'XX', expiry, ARGV[i])
end
return {1}
`;
