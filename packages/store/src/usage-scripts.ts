// Lua for usage metering (usage.ts), shared by the step-commit script and the slot script so a
// step's usage lands in the same atomic write as its record: a step commits once (HSETNX), so
// its usage counts once; slot seconds are kept per attempt as a high-water mark, so a re-sent
// or repeated report of the same attempt adds nothing.
//
// Keys (from `base`): run usage hash, the tenant's day and month usage hashes, its limits hash.
// Args (from `arg`): usage increment JSON ('' = none; fields of Usage, `usd:<field>` the USD of
// each, `usd` their total), attempt
// ('' = no slot report), seconds the attempt has held its slot, USD per slot second, the run's
// `budget.maxUsd` ('' = none).
// Result (`meter_over`): '' or 'run' / 'tenant' (the cap reached), with spent and cap.

/** Lua: defines `meter()`, applying the increment and the slot report to every usage hash. */
export const METER_LUA = (base: number, arg: number) => `
local function meter()
  local targets = {KEYS[${base}], KEYS[${base + 1}], KEYS[${base + 2}]}
  local usd = 0
  if ARGV[${arg}] ~= '' then
    for field, value in pairs(cjson.decode(ARGV[${arg}])) do
      if field == 'usd' then usd = usd + value
      elseif value > 0 then
        for _, key in ipairs(targets) do redis.call('HINCRBYFLOAT', key, field, value) end
      end
    end
  end
  if ARGV[${arg + 1}] ~= '' then
    local field = 'slot/' .. ARGV[${arg + 1}]
    local held = tonumber(redis.call('HGET', KEYS[${base}], field) or '0')
    local delta = tonumber(ARGV[${arg + 2}]) - held
    if delta > 0 then
      redis.call('HSET', KEYS[${base}], field, ARGV[${arg + 2}])
      local cost = delta * tonumber(ARGV[${arg + 3}])
      for _, key in ipairs(targets) do
        redis.call('HINCRBYFLOAT', key, 'slotSeconds', delta)
        if cost > 0 then redis.call('HINCRBYFLOAT', key, 'usd:slotSeconds', cost) end
      end
      usd = usd + cost
    end
  end
  if usd > 0 then
    for _, key in ipairs(targets) do redis.call('HINCRBYFLOAT', key, 'usd', usd) end
  end
end
local function meter_over()
  local spent = tonumber(redis.call('HGET', KEYS[${base}], 'usd') or '0')
  if ARGV[${arg + 4}] ~= '' and spent >= tonumber(ARGV[${arg + 4}]) then
    return {'run', tostring(spent), ARGV[${arg + 4}]}
  end
  local cap = redis.call('HMGET', KEYS[${base + 3}], 'maxUsd', 'budgetPeriod')
  if cap[1] then
    local bucket = KEYS[${base + 2}]
    if cap[2] == 'day' then bucket = KEYS[${base + 1}] end
    local tenant = tonumber(redis.call('HGET', bucket, 'usd') or '0')
    if tenant >= tonumber(cap[1]) then return {'tenant', tostring(tenant), cap[1]} end
  end
  return {'', tostring(spent), ''}
end
`;

/** KEYS: run, run usage, tenant day, tenant month, tenant limits. ARGV: as METER_LUA from 1.
 * A slot report on its own (an attempt's end); the run must exist. */
export const METER_SLOT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
${METER_LUA(2, 1)}
meter()
local over = meter_over()
return {'metered', over[1], over[2], over[3]}
`;

/** Lua, inside the transition script (scripts.ts) on a start (queued | retrying -> running):
 * a run whose own budget (`spec.budget.maxUsd`, against its usage hash `guard.runUsage`) or
 * whose tenant's cap (the limits hash's `maxUsd` over the current UTC `budgetPeriod`, from the
 * transition's time ARGV[5]) is spent does not start: the reply is
 * {'over-budget', state, scope, spent, cap, period}. Decided in the same atomic script as the
 * start, so starts racing each other cannot all pass a cap one step short of it. The tenant's
 * usage key is its limits key with \`limits\` replaced by \`usage:<period>\` (context.ts). */
export const BUDGET_AT_START = `
local spec = cjson.decode(redis.call('HGET', KEYS[1], 'spec') or '{}')
local own = type(spec.budget) == 'table' and tonumber(spec.budget.maxUsd) or nil
if own then
  local spent = tonumber(redis.call('HGET', guard.runUsage, 'usd') or '0')
  if spent >= own then return {'over-budget', state, 'run', tostring(spent), tostring(own), ''} end
end
local cap = redis.call('HMGET', tenantLimits, 'maxUsd', 'budgetPeriod')
if cap[1] then
  local period = string.sub(ARGV[5], 1, 7)
  if cap[2] == 'day' then period = string.sub(ARGV[5], 1, 10) end
  local usage = string.sub(tenantLimits, 1, -7) .. 'usage:' .. period
  local spent = tonumber(redis.call('HGET', usage, 'usd') or '0')
  if spent >= tonumber(cap[1]) then
    return {'over-budget', state, 'tenant', tostring(spent), cap[1], period}
  end
end
`;
