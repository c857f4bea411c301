// Adapter slots in the transition script (scripts.ts TRANSITION; docs/operations.md "Adapter
// capacity"). A run's `adapterDemand` field (JSON, written at creation: [{role, endpoint, slots,
// detail}]) names the endpoints it holds slots on. Per endpoint `<prefix>:endpoint:<role>:<name>`:
// - `:capacity` hash {slots, oversubscribe} (written from the operator config at control-plane
//   start, adapter-slots.ts); no hash: the endpoint admits everything (its holds are still kept);
// - `:held` hash run id -> slots, of the runs in state `running`;
// - `:waiting` zset of runs refused for want of its slots, by (100 - priority) * 1e13 + the time
//   they began waiting: a run ahead of another reserves its slots, so runs start in priority
//   order (then first come) and a small run never overtakes a large one that waits.
// - a shared reference (a demand's `reference`, docs/operations.md "Shared references"):
//   `:reference:<id>:users` set of the running runs that score against it, and `:reference:<id>`
//   hash {generation, path}. The reference holds one slot in `:held` (as `reference:<id>`) while
//   it has users; each user holds its demand less that one. The first user starts a new
//   generation (the adapter is `<id>@shared.<generation>`, a name never loaded before); when
//   the last user leaves, the generation's adapter name and path go to `:reference-unloads`
//   for a worker to unload (shared-references.ts).
// Entering `running` checks every endpoint first and then takes all the slots (one script:
// atomic with the tenant cap and the budget check); leaving `running` for any state gives them
// back, and pausing or ending also leaves the waiting sets: the paths that release tenant slots.

/** Lua, after `runId` is set: the run's demand and the key base of its endpoints (the run key
 * is `<prefix>:run:<runId>`, so the prefix is its head). */
export const ADAPTER_DEMAND = `
local adapterDemand = cjson.decode(redis.call('HGET', KEYS[1], 'adapterDemand') or '[]')
local runKeyBase = string.sub(KEYS[1], 1, #KEYS[1] - #runId - 5)
local function endpointKey(d) return runKeyBase .. ':endpoint:' .. d.role .. ':' .. d.endpoint end
local function referenceKey(d) return endpointKey(d) .. ':reference:' .. d.reference end
-- Slots a demand needs now: one fewer while another run already holds its shared reference.
local function slotsNeeded(d, who)
  if d.reference and redis.call('SCARD', referenceKey(d) .. ':users') > 0 and
      redis.call('SISMEMBER', referenceKey(d) .. ':users', who) == 0 then
    return d.slots - 1
  end
  return d.slots
end
`;

/** Lua, when entering `running` after the tenant cap passed: returns {'blocked', state, reason}
 * (and records why) when any endpoint lacks the slots; `poolWaiting` gives the wait start. */
export const ADMIT_ADAPTERS = `
if to == 'running' and #adapterDemand > 0 then
  local priority = tonumber(redis.call('HGET', KEYS[1], 'priority') or '0') or 0
  local since = tonumber(redis.call('ZSCORE', poolWaiting, runId) or ARGV[6])
  local score = string.format('%.0f', (100 - priority) * 1e13 + since)
  for _, d in ipairs(adapterDemand) do
    local ek = endpointKey(d)
    local cap = redis.call('HMGET', ek .. ':capacity', 'slots', 'oversubscribe')
    local slots = tonumber(cap[1] or '')
    local need = slotsNeeded(d, runId)
    if slots and cap[2] ~= '1' and redis.call('HEXISTS', ek .. ':held', runId) == 0 then
      local flat = redis.call('HGETALL', ek .. ':held')
      local held, holders, runs, references = 0, {}, 0, 0
      for i = 1, #flat, 2 do
        held = held + tonumber(flat[i + 1])
        -- Shared references are counted, never named: an id is its tenant's secret.
        if string.sub(flat[i], 1, 10) == 'reference:' then
          references = references + 1
        else
          runs = runs + 1
          if #holders < 5 then holders[#holders + 1] = flat[i] .. ' (' .. flat[i + 1] .. ')' end
        end
      end
      if runs > 5 then holders[#holders + 1] = 'and ' .. (runs - 5) .. ' more' end
      local reserved, ahead = 0, {}
      for _, other in ipairs(redis.call('ZRANGEBYSCORE', ek .. ':waiting', '-inf', '(' .. score)) do
        local otherKey = runKeyBase .. ':run:' .. other
        local o = redis.call('HMGET', otherKey, 'state', 'adapterDemand')
        local otherSlots = 0
        if o[1] == 'queued' or o[1] == 'retrying' then
          for _, od in ipairs(cjson.decode(o[2] or '[]')) do
            if od.role == d.role and od.endpoint == d.endpoint then otherSlots = slotsNeeded(od, other) end
          end
        end
        if otherSlots == 0 or otherSlots > slots then
          redis.call('ZREM', ek .. ':waiting', other)
        else
          reserved = reserved + otherSlots
          if #ahead < 5 then ahead[#ahead + 1] = other .. ' (' .. otherSlots .. ')' end
          -- Already blocked: the rest of the line cannot change that (a retry every 2 s of
          -- each waiting run must not read the whole line).
          if held + reserved + need > slots then break end
        end
      end
      if held + reserved + need > slots then
        local reason = 'waiting for ' .. need .. ' adapter slots on ' .. d.role .. " endpoint '" ..
          d.endpoint .. "': " .. held .. ' of ' .. slots .. ' held'
        if #holders > 0 then reason = reason .. ' by runs ' .. table.concat(holders, ', ') end
        if references > 0 then
          reason = reason .. (#holders > 0 and ' and ' or ' by ') .. references .. ' shared reference' ..
            (references > 1 and 's' or '') .. ' (1 each)'
        end
        if reserved > 0 then
          reason = reason .. '; ' .. reserved .. ' reserved for runs ahead in priority order: ' ..
            table.concat(ahead, ', ')
        end
        redis.call('ZADD', ek .. ':waiting', score, runId)
        redis.call('HSET', KEYS[1], 'waitingReason', reason)
        return {'blocked', state, reason}
      end
    end
  end
end
`;

/** Lua, once the transition is decided: takes the slots on entering `running`, gives them back
 * on leaving it, and drops the run from the waiting sets when it pauses or ends. */
export const MOVE_ADAPTERS = `
for _, d in ipairs(adapterDemand) do
  local ek = endpointKey(d)
  local own = d.slots
  if d.reference then
    local rk, holder = referenceKey(d), 'reference:' .. d.reference
    own = d.slots - 1
    if to == 'running' then
      if redis.call('SCARD', rk .. ':users') == 0 then
        redis.call('HINCRBY', rk, 'generation', 1)
        redis.call('HDEL', rk, 'path')
        redis.call('HSET', ek .. ':held', holder, 1)
      end
      redis.call('SADD', rk .. ':users', runId)
    elseif redis.call('SREM', rk .. ':users', runId) == 1 and redis.call('SCARD', rk .. ':users') == 0 then
      redis.call('HDEL', ek .. ':held', holder)
      local ref = redis.call('HMGET', rk, 'generation', 'path')
      redis.call('HSET', ek .. ':reference-unloads', d.reference .. '@shared.' .. ref[1], ref[2] or '')
    end
  end
  if to == 'running' then
    redis.call('HSET', ek .. ':held', runId, own)
    redis.call('ZREM', ek .. ':waiting', runId)
  else
    redis.call('HDEL', ek .. ':held', runId)
    if to == 'paused' or terminal[to] then redis.call('ZREM', ek .. ':waiting', runId) end
  end
end
`;
