-- benchlib: one writer node's part of a load on several writer nodes (sysbench 1.0.20).
--
-- The test named by the environment variable BENCHLIB_INNER (sysbench's oltp_update_index, oltp_read_write ...)
-- runs as itself, with three additions:
--
-- * --key-part=K --key-parts=N (N > 1: each writer node on its own keys): every row id the test draws
--   (sysbench.rand.default(1, table_size)) falls in the K-th of N equal ranges of the table's rows, drawn within it
--   by the run's key distribution;
-- * every error the server asks to retry (1213 a deadlock or a certification failure, 1205, 1020, 1180 a rollback
--   at commit, 3101 a certification failure at commit, 3100) restarts the event (sysbench's way: the transaction
--   runs again with keys drawn again), counted by number per thread and second;
-- * --retry=R (R >= 0; -1: for ever, sysbench's own way): after R retries of one transaction it is given up, as an
--   application with a bounded retry loop would; its event then ends without a commit and is counted as given up.
--
-- Per thread and second with something to say, on standard output (SECOND on CLOCK_MONOTONIC, the sampler's clock):
--   benchlib-writer NODE SECOND COMMITTED GIVEN_UP [ERRNO:N ...]
-- (NODE: --writer, the node this part of the load writes to)

local inner = os.getenv("BENCHLIB_INNER")
if inner == nil or inner == "" then
  error("writers.lua runs the test BENCHLIB_INNER names (e.g. oltp_update_index): it is not set")
end
require(inner)

local ffi = require("ffi")
pcall(ffi.cdef, "typedef struct { long sec; long nsec; } benchlib_ts; int clock_gettime(int, benchlib_ts *);")
local ts = ffi.new("benchlib_ts")
local function now()
  ffi.C.clock_gettime(1, ts)  -- CLOCK_MONOTONIC: the clock benchlib's sampler keeps
  return tonumber(ts.sec) + tonumber(ts.nsec) / 1e9
end

sysbench.cmdline.options.key_part = {"This writer node's part of the keys (1..key-parts)", 1}
sysbench.cmdline.options.key_parts = {"Parts the keys are split into, one a writer node (1: every node on all)", 1}
sysbench.cmdline.options.retry = {"Retries of a transaction before it is given up (-1: for ever)", -1}
sysbench.cmdline.options.writer = {"The node this part of the load writes to, named in the lines", "-"}

local RETRY = {[1213] = true, [1205] = true, [1020] = true, [1180] = true, [3101] = true, [3100] = true}
local ignorable = sysbench.hooks.sql_error_ignorable
sysbench.hooks.sql_error_ignorable = function(e)
  return RETRY[e.sql_errno] == true or (ignorable ~= nil and ignorable(e))
end

local draw = sysbench.rand.default
function sysbench.rand.default(lo, hi)
  local parts = sysbench.opt.key_parts
  if parts <= 1 then
    return draw(lo, hi)
  end
  local width = math.max(1, math.floor((hi - lo + 1) / parts))
  return lo + (sysbench.opt.key_part - 1) * width + draw(1, width) - 1
end

local second, committed, given_up, errors, tries, giving_up

local function flush()
  if committed == 0 and given_up == 0 and next(errors) == nil then
    return
  end
  local parts = {}
  for errno, n in pairs(errors) do
    parts[#parts + 1] = errno .. ":" .. n
  end
  io.stdout:write(string.format("benchlib-writer %s %d %d %d %s\n", sysbench.opt.writer, second, committed,
                                given_up, table.concat(parts, " ")))
  committed, given_up, errors = 0, 0, {}
end

local function tick()
  local s = math.floor(now())
  if s ~= second then
    flush()
    second = s
  end
end

local restarted = sysbench.hooks.before_restart_event
function sysbench.hooks.before_restart_event(err)
  tick()
  errors[err.sql_errno] = (errors[err.sql_errno] or 0) + 1
  tries = tries + 1
  if err.sql_errno == 1205 then  -- a lock wait timeout rolls back the statement only: end its transaction
    pcall(con.query, con, "ROLLBACK")
  end
  if restarted ~= nil then
    restarted(err)
  end
  if sysbench.opt.retry >= 0 and tries > sysbench.opt.retry then
    giving_up = true  -- the next run of event() ends it without a commit
  end
end

local inner_init, inner_done, inner_event = thread_init, thread_done, event

function thread_init(...)
  inner_init(...)
  second, committed, given_up, errors, tries, giving_up = math.floor(now()), 0, 0, {}, 0, false
end

function thread_done(...)
  tick()
  flush()
  io.stdout:flush()
  inner_done(...)
end

function event(...)
  if giving_up then
    giving_up, tries = false, 0
    tick()
    given_up = given_up + 1
    return
  end
  local r = inner_event(...)
  tries = 0
  tick()
  committed = committed + 1
  return r
end
