-- clusterbench report wrapper for sysbench 1.0.20.
--
-- Usage: CLUSTERBENCH_SB_TEST=oltp_read_write sysbench /path/cb_report.lua [options] run
--        CLUSTERBENCH_SB_TEST=access_pk CLUSTERBENCH_SB_MODULE=cb_access sysbench ... run
--
-- Loads the built-in test named by CLUSTERBENCH_SB_TEST (sysbench's package.path ends with its
-- data directory, so require() finds /usr/share/sysbench/<test>.lua) and replaces the
-- human-readable reports with one JSON object per line, prefixed with "CBJSON ", so that
-- clusterbench never scrapes the screen format.
--
-- Latency histograms: the stat table given to the hooks only carries the single configured
-- percentile. sysbench keeps its latency histogram in the exported global sb_latency_histogram,
-- which we read through the FFI:
--   * in report_intermediate, sysbench has just aggregated the interval's events into
--     temp_array (only the reporting thread writes it), so temp_array IS the interval histogram;
--   * the final cumulative array is zeroed before report_cumulative runs, so each worker
--     snapshots cumulative array + pending slots in thread_done instead; the snapshot taken
--     last (largest count) holds every event of the run (or since the warm-up checkpoint).
-- The struct layout below mirrors sb_histogram.h of 1.0.20 (x86_64 glibc); the sanity check
-- in hist_ok() turns histograms off rather than emit garbage if a build differs.

local test = os.getenv("CLUSTERBENCH_SB_TEST")
if test == nil or test == "" then
   error("clusterbench: CLUSTERBENCH_SB_TEST is not set; it names the built-in test to run")
end
local ffi = require("ffi")

-- Wall clock of each report, so that the intervals of clients on different hosts can be checked
-- against each other (os.time() has whole seconds only). Own type name: sysbench's Lua may
-- declare struct timespec some day, and a second declaration would be an error. Declared before
-- the test loads, so that a test of our own (cb_tpcc) can use the same declaration.
local WALL_OK = pcall(ffi.cdef, [[
typedef struct { long tv_sec; long tv_nsec; } cb_timespec_t;
int clock_gettime(int clk_id, cb_timespec_t *tp);
]])

-- A test of our own (CLUSTERBENCH_SB_MODULE, e.g. cb_access) lives beside this file.
local module = os.getenv("CLUSTERBENCH_SB_MODULE")
if module ~= nil and module ~= "" then
   local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
   package.path = here .. "?.lua;" .. package.path
   require(module)
else
   require(test)
end

-- A test may define cb_extra_json() returning a JSON object of its own cumulative counters
-- (e.g. cb_tpcc's per-transaction-type counts); it goes into every report line as "extra".
local function extra_json()
   if type(cb_extra_json) ~= "function" then
      return ""
   end
   local ok, s = pcall(cb_extra_json)
   if not ok or type(s) ~= "string" then
      return ""
   end
   return ',"extra":' .. s
end

ffi.cdef[[
typedef struct {
  uint64_t  *cumulative_array;
  uint64_t   cumulative_nevents;
  uint64_t  *temp_array;
  uint64_t **interm_slots;
  size_t     array_size;
  double     range_min;
  double     range_max;
  double     range_deduct;
  double     range_mult;
  char       lock[56];
} cb_sb_histogram_t;
cb_sb_histogram_t sb_latency_histogram;
int pthread_rwlock_rdlock(void *lock);
int pthread_rwlock_unlock(void *lock);
]]

local PREFIX = "CBJSON "
local H = ffi.C.sb_latency_histogram

local TS = WALL_OK and ffi.new("cb_timespec_t") or nil

local function wall_json()
   if not WALL_OK or ffi.C.clock_gettime(0, TS) ~= 0 then  -- 0: CLOCK_REALTIME
      return "null"
   end
   return string.format("%d.%09d", tonumber(TS.tv_sec), tonumber(TS.tv_nsec))
end

local function hist_ok()
   local n = tonumber(H.array_size)
   return n ~= nil and n >= 16 and n <= 1000000 and H.range_min > 0
      and H.range_max > H.range_min and H.range_mult > 0
      and math.abs(H.range_deduct - math.log(H.range_min)) < 1e-9
end

local HIST_OK = hist_ok()

local function num(x)
   if x ~= x or x == math.huge or x == -math.huge then
      return "null"
   end
   return string.format("%.17g", x)
end

local function scheme_json()
   if not HIST_OK then
      return "null"
   end
   return string.format('{"size":%d,"deduct":%s,"mult":%s}', tonumber(H.array_size),
                        num(H.range_deduct), num(H.range_mult))
end

-- sparse [[index,count],...] of a uint64_t array
local function buckets_json(arr)
   local parts = {}
   for i = 0, tonumber(H.array_size) - 1 do
      local c = arr[i]
      if c ~= 0 then
         parts[#parts + 1] = string.format("[%d,%s]", i, tostring(c):gsub("ULL$", ""))
      end
   end
   return "[" .. table.concat(parts, ",") .. "]"
end

local function emit(s)
   -- one write per line: stdout is shared by the reporting and worker threads
   io.stdout:write(PREFIX .. s .. "\n")
   io.stdout:flush()
end

local function common(stat)
   return string.format(
      '"time_total":%s,"time_interval":%s,"threads":%d,"events":%s,"reads":%s,"writes":%s,' ..
      '"other":%s,"errors":%s,"reconnects":%s,"percentile":%s,"latency_pct_ms":%s',
      num(stat.time_total), num(stat.time_interval), stat.threads_running, num(stat.events),
      num(stat.reads), num(stat.writes), num(stat.other), num(stat.errors), num(stat.reconnects),
      num(sysbench.opt.percentile), num(stat.latency_pct * 1000))
end

function sysbench.hooks.report_intermediate(stat)
   local wall = wall_json()
   local hist = "null"
   if HIST_OK then
      hist = buckets_json(H.temp_array)
   end
   emit(string.format('{"type":"interval",%s,"wall":%s,"queue_length":%s,"concurrency":%s,' ..
                      '"hist_scheme":%s,"hist":%s%s}',
                      common(stat), wall, num(stat.queue_length or 0), num(stat.concurrency or 0),
                      scheme_json(), hist, extra_json()))
end

function sysbench.hooks.report_cumulative(stat)
   -- the checkpoint thread (used for the warm-up reset) runs with tid == threads
   local kind = "summary"
   if sysbench.tid == sysbench.opt.threads then
      kind = "checkpoint"
   end
   emit(string.format('{"type":"%s",%s,"latency_min_ms":%s,"latency_avg_ms":%s,' ..
                      '"latency_max_ms":%s,"latency_sum_ms":%s%s}',
                      kind, common(stat), num(stat.latency_min * 1000),
                      num(stat.latency_avg * 1000), num(stat.latency_max * 1000),
                      num(stat.latency_sum * 1000), extra_json()))
end

local NSLOTS = 128  -- SB_HISTOGRAM_NSLOTS in sb_histogram.c

-- cumulative array plus the not yet aggregated per-slot counts, read without merging them, so
-- that the reporting thread still sees every event in its next interval histogram
local function snapshot()
   if not HIST_OK then
      return
   end
   local lock = ffi.cast("void *", H.lock)
   local n = tonumber(H.array_size)
   local parts = {}
   local total = 0
   ffi.C.pthread_rwlock_rdlock(lock)
   for i = 0, n - 1 do
      local c = tonumber(H.cumulative_array[i])
      for s = 0, NSLOTS - 1 do
         c = c + tonumber(H.interm_slots[s][i])
      end
      if c ~= 0 then
         parts[#parts + 1] = string.format("[%d,%d]", i, c)
         total = total + c
      end
   end
   ffi.C.pthread_rwlock_unlock(lock)
   emit(string.format('{"type":"histogram","tid":%d,"count":%d,"hist_scheme":%s,"hist":[%s]}',
                      sysbench.tid, total, scheme_json(), table.concat(parts, ",")))
end

if sysbench.cmdline.command == "run" then
   local test_thread_done = thread_done
   function thread_done(...)
      local ok, err = true, nil
      if test_thread_done ~= nil then
         ok, err = pcall(test_thread_done, ...)
      end
      snapshot()
      if not ok then
         error(err, 0)
      end
   end
end
