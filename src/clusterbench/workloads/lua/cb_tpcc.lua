-- clusterbench's TPC-C-like workload for sysbench 1.0.20 (written for clusterbench; see
-- docs/workloads.md, "TPC-C-like", for what is simplified against the TPC-C specification).
--
--   sysbench cb_tpcc.lua --warehouses=N [--threads=T] prepare   load N warehouses, T in parallel
--   CLUSTERBENCH_SB_TEST=cb_tpcc sysbench cb_report.lua ... run  the five transactions
--   sysbench cb_tpcc.lua cleanup                                drop the nine tables
--
-- The run reads its scale (warehouses, districts' customers, items) from the loaded tables, so
-- only prepare needs --warehouses. Every transaction is one sysbench event. A deadlock or a
-- Galera certification failure (an ignorable error) restarts the event: the same transaction
-- with the same input is tried again, and the retry is counted for its type.
--
-- Per-type counters live in one block of memory shared by every Lua state of the process (each
-- sysbench thread has a state of its own); each thread writes only its own row, the reporting
-- thread sums the rows. cb_report.lua adds them to every report line as "extra".

local ffi = require("ffi")

ffi.cdef[[
void *calloc(size_t nmemb, size_t size);
void free(void *ptr);
int setenv(const char *name, const char *value, int overwrite);
char *getenv(const char *name);
]]
-- the same declaration as cb_report.lua's (which runs it first when it loads this test)
pcall(ffi.cdef, [[
typedef struct { long tv_sec; long tv_nsec; } cb_timespec_t;
int clock_gettime(int clk_id, cb_timespec_t *tp);
]])

sysbench.cmdline.options = {
   warehouses = {"Number of warehouses to load (prepare)", 1},
   customers = {"Customers per district (TPC-C: 3000; smaller only for quick tests)", 3000},
   items = {"Rows in ITEM and per warehouse in STOCK (TPC-C: 100000; smaller only for quick tests)",
            100000},
   mix = {"Transaction mix: whole-percent weights of new_order,payment,order_status,delivery," ..
          "stock_level, summing to 100 (clusterbench checks them)", "45,43,4,4,4"},
}

local TYPES = {"new_order", "payment", "order_status", "delivery", "stock_level"}
local NO, PAY, OS, DLV, SL = 1, 2, 3, 4, 5
local FIELDS = 4  -- done, rollbacks, retries, latency sum (us)
local MAXT = 1024
-- latency histogram per type: bucket b holds latencies in [2^(b/8), 2^((b+1)/8)) µs (9 % wide)
local HB = 160

-- ---- shared counters -------------------------------------------------------------------------

-- a zeroed block of `size` bytes shared by every Lua state of this process: the first state to
-- get here publishes its address in the environment variable `name`, the others use that one
local function shared_block(name, size)
   local mine = ffi.C.calloc(1, size)
   local addr = string.format("%.0f", tonumber(ffi.cast("uintptr_t", mine)))
   ffi.C.setenv(name, addr, 0)  -- the first state to get here wins
   local got = ffi.string(ffi.C.getenv(name))
   if got ~= addr then
      ffi.C.free(mine)
   end
   return ffi.cast("uint64_t *", ffi.cast("uintptr_t", tonumber(got)))
end

local CNT = shared_block("CB_TPCC_SHM", MAXT * #TYPES * FIELDS * 8)
local HIST = shared_block("CB_TPCC_HIST", MAXT * #TYPES * HB * 8)

local function slot(tid, ty, f)
   return ((tid % MAXT) * #TYPES + (ty - 1)) * FIELDS + f
end

local function bump(ty, f, by)
   local i = slot(sysbench.tid or 0, ty, f)
   CNT[i] = CNT[i] + (by or 1)
end

local LOG2 = math.log(2)
local function bump_latency(ty, us)
   local b = 0
   if us >= 1 then
      b = math.min(HB - 1, math.floor(math.log(us) / LOG2 * 8))
   end
   local i = (((sysbench.tid or 0) % MAXT) * #TYPES + (ty - 1)) * HB + b
   HIST[i] = HIST[i] + 1
end

-- JSON of the counters summed over every thread (cumulative since the start of the run)
function cb_extra_json()
   -- rows written: the workers' (tid 0..threads-1) and the checkpoint thread's (tid = threads)
   local NT = math.min(MAXT, (tonumber(sysbench.opt.threads) or MAXT - 1) + 1)
   local parts = {}
   local hists = {}
   for ty = 1, #TYPES do
      local sums = {0, 0, 0, 0}
      for t = 0, NT - 1 do
         for f = 0, FIELDS - 1 do
            sums[f + 1] = sums[f + 1] + tonumber(CNT[slot(t, ty, f)])
         end
      end
      parts[#parts + 1] = string.format('"%s":[%d,%d,%d,%d]', TYPES[ty], sums[1], sums[2], sums[3],
                                        sums[4])
      local h = {}
      for b = 0, HB - 1 do
         local c = 0
         for t = 0, NT - 1 do
            c = c + tonumber(HIST[(t * #TYPES + (ty - 1)) * HB + b])
         end
         if c > 0 then
            h[#h + 1] = string.format("[%d,%d]", b, c)
         end
      end
      hists[#hists + 1] = string.format('"%s":[%s]', TYPES[ty], table.concat(h, ","))
   end
   return '{"tpcc":{' .. table.concat(parts, ",") .. '},"tpcc_hist":{' .. table.concat(hists, ",") .. '}}'
end

local TS = ffi.new("cb_timespec_t")
local function now_us()
   ffi.C.clock_gettime(1, TS)  -- CLOCK_MONOTONIC
   return tonumber(TS.tv_sec) * 1000000 + math.floor(tonumber(TS.tv_nsec) / 1000)
end

-- ---- random input (clause 2.1.6 and 4.3.2) -----------------------------------------------------

local rnd = sysbench.rand.uniform

-- C constants of NURand: fixed per run, C_LAST's run value differs from its load value by 66
-- (the spec wants a difference in 65..119 other than 96 and 112)
local C_LAST_LOAD, C_LAST_RUN, C_ID, C_ITEM = 157, 223, 259, 7911

local function nurand(a, x, y, c)
   return (((bit.bor(rnd(0, a), rnd(x, y))) + c) % (y - x + 1)) + x
end

local SYL = {"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}
local function last_name(n)
   return SYL[math.floor(n / 100) + 1] .. SYL[math.floor(n / 10) % 10 + 1] .. SYL[n % 10 + 1]
end

local ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
local function astring(lo, hi)
   local n = rnd(lo, hi)
   local t = {}
   for i = 1, n do
      local k = rnd(1, #ALNUM)
      t[i] = ALNUM:sub(k, k)
   end
   return table.concat(t)
end

local function nstring(lo, hi)
   local n = rnd(lo, hi)
   local t = {}
   for i = 1, n do
      t[i] = tostring(rnd(0, 9))
   end
   return table.concat(t)
end

local function zip()
   return nstring(4, 4) .. "11111"
end

-- 10 % of I_DATA / S_DATA carry "ORIGINAL" somewhere
local function data_with_original(lo, hi)
   local s = astring(lo, hi)
   if rnd(1, 10) == 1 then
      local p = rnd(1, #s - 8)
      s = s:sub(1, p - 1) .. "ORIGINAL" .. s:sub(p + 8)
   end
   return s
end

-- ---- schema --------------------------------------------------------------------------------

local TABLES = {"warehouse", "district", "customer", "history", "new_order", "orders", "order_line",
                "item", "stock"}

local DDL = {
   warehouse = [[CREATE TABLE IF NOT EXISTS warehouse (
  w_id INT NOT NULL, w_name VARCHAR(10), w_street_1 VARCHAR(20), w_street_2 VARCHAR(20),
  w_city VARCHAR(20), w_state CHAR(2), w_zip CHAR(9), w_tax DECIMAL(4,4), w_ytd DECIMAL(12,2),
  PRIMARY KEY (w_id))]],
   district = [[CREATE TABLE IF NOT EXISTS district (
  d_id TINYINT NOT NULL, d_w_id INT NOT NULL, d_name VARCHAR(10), d_street_1 VARCHAR(20),
  d_street_2 VARCHAR(20), d_city VARCHAR(20), d_state CHAR(2), d_zip CHAR(9), d_tax DECIMAL(4,4),
  d_ytd DECIMAL(12,2), d_next_o_id INT, PRIMARY KEY (d_w_id, d_id))]],
   customer = [[CREATE TABLE IF NOT EXISTS customer (
  c_id INT NOT NULL, c_d_id TINYINT NOT NULL, c_w_id INT NOT NULL, c_first VARCHAR(16),
  c_middle CHAR(2), c_last VARCHAR(16), c_street_1 VARCHAR(20), c_street_2 VARCHAR(20),
  c_city VARCHAR(20), c_state CHAR(2), c_zip CHAR(9), c_phone CHAR(16), c_since DATETIME,
  c_credit CHAR(2), c_credit_lim DECIMAL(12,2), c_discount DECIMAL(4,4), c_balance DECIMAL(12,2),
  c_ytd_payment DECIMAL(12,2), c_payment_cnt INT, c_delivery_cnt INT, c_data VARCHAR(500),
  PRIMARY KEY (c_w_id, c_d_id, c_id), KEY c_name (c_w_id, c_d_id, c_last, c_first))]],
   -- TPC-C's HISTORY has no key; Galera wants one on every table
   history = [[CREATE TABLE IF NOT EXISTS history (
  h_pk BIGINT NOT NULL AUTO_INCREMENT, h_c_id INT, h_c_d_id TINYINT, h_c_w_id INT, h_d_id TINYINT,
  h_w_id INT, h_date DATETIME, h_amount DECIMAL(6,2), h_data VARCHAR(24), PRIMARY KEY (h_pk),
  KEY h_cust (h_c_w_id, h_c_d_id, h_c_id), KEY h_dist (h_w_id, h_d_id))]],
   new_order = [[CREATE TABLE IF NOT EXISTS new_order (
  no_o_id INT NOT NULL, no_d_id TINYINT NOT NULL, no_w_id INT NOT NULL,
  PRIMARY KEY (no_w_id, no_d_id, no_o_id))]],
   orders = [[CREATE TABLE IF NOT EXISTS orders (
  o_id INT NOT NULL, o_d_id TINYINT NOT NULL, o_w_id INT NOT NULL, o_c_id INT, o_entry_d DATETIME,
  o_carrier_id TINYINT NULL, o_ol_cnt TINYINT, o_all_local TINYINT,
  PRIMARY KEY (o_w_id, o_d_id, o_id), KEY o_cust (o_w_id, o_d_id, o_c_id, o_id))]],
   order_line = [[CREATE TABLE IF NOT EXISTS order_line (
  ol_o_id INT NOT NULL, ol_d_id TINYINT NOT NULL, ol_w_id INT NOT NULL, ol_number TINYINT NOT NULL,
  ol_i_id INT, ol_supply_w_id INT, ol_delivery_d DATETIME NULL, ol_quantity TINYINT,
  ol_amount DECIMAL(6,2), ol_dist_info CHAR(24), PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))]],
   item = [[CREATE TABLE IF NOT EXISTS item (
  i_id INT NOT NULL, i_im_id INT, i_name VARCHAR(24), i_price DECIMAL(5,2), i_data VARCHAR(50),
  PRIMARY KEY (i_id))]],
   stock = [[CREATE TABLE IF NOT EXISTS stock (
  s_i_id INT NOT NULL, s_w_id INT NOT NULL, s_quantity SMALLINT, s_dist_01 CHAR(24),
  s_dist_02 CHAR(24), s_dist_03 CHAR(24), s_dist_04 CHAR(24), s_dist_05 CHAR(24), s_dist_06 CHAR(24),
  s_dist_07 CHAR(24), s_dist_08 CHAR(24), s_dist_09 CHAR(24), s_dist_10 CHAR(24), s_ytd INT,
  s_order_cnt SMALLINT, s_remote_cnt SMALLINT, s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id))]],
}

local function connect()
   local drv = sysbench.sql.driver()
   return drv:connect()
end

local function q1(con, sql)
   return con:query_row(sql)
end

-- ---- loading (clause 4.3.3.1), parallel by warehouse, resumable ---------------------------------

local function esc(s)
   return "'" .. s .. "'"  -- generated strings hold letters and digits only
end

local NOW = "NOW()"

local function load_items(con, lo, hi)
   if lo > hi then
      return 0
   end
   local have = tonumber(q1(con, string.format(
      "SELECT COUNT(*) FROM item WHERE i_id BETWEEN %d AND %d", lo, hi)))
   if have == hi - lo + 1 then
      return 0
   end
   con:query(string.format("DELETE FROM item WHERE i_id BETWEEN %d AND %d", lo, hi))
   con:bulk_insert_init("INSERT INTO item VALUES")
   for i = lo, hi do
      con:bulk_insert_next(string.format("(%d,%d,%s,%.2f,%s)", i, rnd(1, 10000),
                                         esc(astring(14, 24)), rnd(100, 10000) / 100,
                                         esc(data_with_original(26, 50))))
   end
   con:bulk_insert_done()
   return hi - lo + 1
end

local PER_WAREHOUSE = {"stock", "district", "customer", "history", "orders", "new_order",
                       "order_line"}
local W_COL = {stock = "s_w_id", district = "d_w_id", customer = "c_w_id", history = "h_w_id",
               orders = "o_w_id", new_order = "no_w_id", order_line = "ol_w_id"}

local function load_warehouse(con, w, customers, items)
   if q1(con, "SELECT w_id FROM warehouse WHERE w_id = " .. w) ~= nil then
      return 0  -- loaded by an earlier prepare: its row is written last
   end
   for _, t in ipairs(PER_WAREHOUSE) do
      con:query(string.format("DELETE FROM %s WHERE %s = %d", t, W_COL[t], w))
   end
   local rows = 0
   con:bulk_insert_init("INSERT INTO stock VALUES")
   for i = 1, items do
      local d = {}
      for k = 1, 10 do
         d[k] = esc(astring(24, 24))
      end
      con:bulk_insert_next(string.format("(%d,%d,%d,%s,0,0,0,%s)", i, w, rnd(10, 100),
                                         table.concat(d, ","), esc(data_with_original(26, 50))))
   end
   con:bulk_insert_done()
   rows = rows + items
   local undelivered_from = math.floor(customers * 7 / 10) + 1  -- TPC-C: orders 2101..3000
   for d = 1, 10 do
      con:query(string.format(
         "INSERT INTO district VALUES (%d,%d,%s,%s,%s,%s,%s,%s,%.4f,%.2f,%d)", d, w,
         esc(astring(6, 10)), esc(astring(10, 20)), esc(astring(10, 20)), esc(astring(10, 20)),
         esc(astring(2, 2)), esc(zip()), rnd(0, 2000) / 10000, customers * 10.0, customers + 1))
      con:bulk_insert_init("INSERT INTO customer VALUES")
      for c = 1, customers do
         local last
         if c <= 1000 then
            last = last_name(c - 1)
         else
            last = last_name(nurand(255, 0, 999, C_LAST_LOAD))
         end
         con:bulk_insert_next(string.format(
            "(%d,%d,%d,%s,'OE',%s,%s,%s,%s,%s,%s,%s,NOW(),%s,50000.00,%.4f,-10.00,10.00,1,0,%s)",
            c, d, w, esc(astring(8, 16)), esc(last), esc(astring(10, 20)), esc(astring(10, 20)),
            esc(astring(10, 20)), esc(astring(2, 2)), esc(zip()), esc(nstring(16, 16)),
            rnd(1, 10) == 1 and "'BC'" or "'GC'", rnd(0, 5000) / 10000, esc(astring(300, 500))))
      end
      con:bulk_insert_done()
      con:bulk_insert_init(
         "INSERT INTO history (h_c_id,h_c_d_id,h_c_w_id,h_d_id,h_w_id,h_date,h_amount,h_data) VALUES")
      for c = 1, customers do
         con:bulk_insert_next(string.format("(%d,%d,%d,%d,%d,NOW(),10.00,%s)", c, d, w, d, w,
                                            esc(astring(12, 24))))
      end
      con:bulk_insert_done()
      -- a random permutation of the customers places the orders
      local perm = {}
      for c = 1, customers do
         perm[c] = c
      end
      for c = customers, 2, -1 do
         local k = rnd(1, c)
         perm[c], perm[k] = perm[k], perm[c]
      end
      local counts = {}
      con:bulk_insert_init("INSERT INTO orders VALUES")
      for o = 1, customers do
         counts[o] = rnd(5, 15)
         local carrier = o < undelivered_from and tostring(rnd(1, 10)) or "NULL"
         con:bulk_insert_next(string.format("(%d,%d,%d,%d,NOW(),%s,%d,1)", o, d, w, perm[o], carrier,
                                            counts[o]))
      end
      con:bulk_insert_done()
      con:bulk_insert_init("INSERT INTO order_line VALUES")
      for o = 1, customers do
         local delivered = o < undelivered_from
         for n = 1, counts[o] do
            con:bulk_insert_next(string.format("(%d,%d,%d,%d,%d,%d,%s,5,%s,%s)", o, d, w, n,
                                               rnd(1, items), w, delivered and NOW or "NULL",
                                               delivered and "0.00" or string.format("%.2f", rnd(1, 999999) / 100),
                                               esc(astring(24, 24))))
         end
         rows = rows + counts[o]
      end
      con:bulk_insert_done()
      con:bulk_insert_init("INSERT INTO new_order VALUES")
      for o = undelivered_from, customers do
         con:bulk_insert_next(string.format("(%d,%d,%d)", o, d, w))
      end
      con:bulk_insert_done()
      rows = rows + 1 + customers * 3 + (customers - undelivered_from + 1)
   end
   con:query(string.format("INSERT INTO warehouse VALUES (%d,%s,%s,%s,%s,%s,%s,%.4f,%.2f)", w,
                           esc(astring(6, 10)), esc(astring(10, 20)), esc(astring(10, 20)),
                           esc(astring(10, 20)), esc(astring(2, 2)), esc(zip()),
                           rnd(0, 2000) / 10000, customers * 100.0))
   return rows + 1
end

local function cmd_prepare()
   local con = connect()
   local threads = sysbench.opt.threads
   local tid = sysbench.tid % threads
   for _, t in ipairs(TABLES) do
      con:query(DDL[t])
   end
   local items = sysbench.opt.items
   local per = math.ceil(items / threads)
   local t0 = now_us()
   local rows = load_items(con, tid * per + 1, math.min(items, (tid + 1) * per))
   local loaded = 0
   for w = tid + 1, sysbench.opt.warehouses, threads do
      local n = load_warehouse(con, w, sysbench.opt.customers, items)
      rows = rows + n
      if n > 0 then
         loaded = loaded + 1
         print(string.format("CBLOAD warehouse %d: %d rows", w, n))
      end
   end
   print(string.format("CBLOAD thread %d: %d rows, %d warehouse(s) in %.3f s", tid, rows, loaded,
                       (now_us() - t0) / 1e6))
   con:disconnect()
end

sysbench.cmdline.commands = {
   prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND},
}

function cleanup()
   local con = connect()
   for _, t in ipairs(TABLES) do
      con:query("DROP TABLE IF EXISTS " .. t)
   end
end

-- ---- the five transactions (clause 2.4 to 2.8) --------------------------------------------------

local con
local W, CUSTOMERS, ITEMS
-- the mix as cumulative bounds: a draw r in 1..100 is type k for the first k with r <= CUM[k]
local CUM = {45, 88, 92, 96, 100}

local function read_mix(text)
   local cum, sum, k = {}, 0, 0
   for x in string.gmatch(text, "[^,]+") do
      k = k + 1
      local v = tonumber(x)
      if v == nil or v < 0 or v ~= math.floor(v) then
         error("--mix: '" .. text .. "' is not five whole-percent weights")
      end
      sum = sum + v
      cum[k] = sum
   end
   if k ~= #TYPES or sum ~= 100 then
      error("--mix: '" .. text .. "' is not five weights summing to 100")
   end
   return cum
end

function thread_init()
   CUM = read_mix(sysbench.opt.mix)
   con = connect()
   W = tonumber(q1(con, "SELECT MAX(w_id) FROM warehouse"))
   CUSTOMERS = tonumber(q1(con, "SELECT MAX(c_id) FROM customer WHERE c_w_id = 1 AND c_d_id = 1"))
   ITEMS = tonumber(q1(con, "SELECT MAX(i_id) FROM item"))
   if W == nil or CUSTOMERS == nil or ITEMS == nil then
      error("the TPC-C tables are empty; run prepare first")
   end
end

function thread_done()
   con:disconnect()
end

local function other_warehouse(w)
   local o = rnd(1, W - 1)
   if o >= w then
      o = o + 1
   end
   return o
end

-- the customer of Payment / Order-Status: 60 % by last name (the middle one by first name)
local function customer_input(w, d)
   if rnd(1, 100) <= 60 then
      return {w = w, d = d, last = last_name(nurand(255, 0, 999, C_LAST_RUN))}
   end
   return {w = w, d = d, id = nurand(1023, 1, CUSTOMERS, C_ID)}
end

local function find_customer(c)
   if c.id ~= nil then
      return c.id
   end
   local rs = con:query(string.format(
      "SELECT c_id FROM customer WHERE c_w_id = %d AND c_d_id = %d AND c_last = '%s' ORDER BY c_first",
      c.w, c.d, c.last))
   local n = rs.nrows
   if n == 0 then
      -- only with fewer than 1000 customers per district (a scaled-down load): take one by id
      return nurand(1023, 1, CUSTOMERS, C_ID)
   end
   local id
   for i = 1, math.ceil(n / 2) do
      id = rs:fetch_row()[1]
   end
   return tonumber(id)
end

local function gen_new_order(w)
   local lines = {}
   local n = rnd(5, 15)
   local rollback = rnd(1, 100) == 1
   local all_local = 1
   for k = 1, n do
      local supply = w
      if W > 1 and rnd(1, 100) == 1 then
         supply = other_warehouse(w)
         all_local = 0
      end
      local item = nurand(8191, 1, ITEMS, C_ITEM)
      if rollback and k == n then
         item = ITEMS + 1  -- an unused item: the transaction rolls back
      end
      lines[k] = {i = item, w = supply, qty = rnd(1, 10)}
   end
   return {kind = NO, w = w, d = rnd(1, 10), c = nurand(1023, 1, CUSTOMERS, C_ID), lines = lines,
           all_local = all_local}
end

local function gen_payment(w)
   local d = rnd(1, 10)
   local cw, cd = w, d
   if W > 1 and rnd(1, 100) > 85 then
      cw, cd = other_warehouse(w), rnd(1, 10)
   end
   return {kind = PAY, w = w, d = d, cust = customer_input(cw, cd), amount = rnd(100, 500000) / 100}
end

local function gen(w)
   local r = rnd(1, 100)
   if r <= CUM[NO] then
      return gen_new_order(w)
   elseif r <= CUM[PAY] then
      return gen_payment(w)
   elseif r <= CUM[OS] then
      return {kind = OS, cust = customer_input(w, rnd(1, 10))}
   elseif r <= CUM[DLV] then
      return {kind = DLV, w = w, carrier = rnd(1, 10)}
   end
   return {kind = SL, w = w, d = rnd(1, 10), threshold = rnd(10, 20)}
end

local function new_order(t)
   local w, d = t.w, t.d
   con:query("BEGIN")
   q1(con, "SELECT w_tax FROM warehouse WHERE w_id = " .. w)
   local o_id = tonumber(q1(con, string.format(
      "SELECT d_next_o_id FROM district WHERE d_w_id = %d AND d_id = %d FOR UPDATE", w, d)))
   con:query(string.format(
      "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = %d AND d_id = %d", w, d))
   q1(con, string.format(
      "SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d",
      w, d, t.c))
   con:query(string.format("INSERT INTO orders VALUES (%d,%d,%d,%d,NOW(),NULL,%d,%d)", o_id, d, w, t.c,
                           #t.lines, t.all_local))
   con:query(string.format("INSERT INTO new_order VALUES (%d,%d,%d)", o_id, d, w))
   for n, l in ipairs(t.lines) do
      local price = q1(con, "SELECT i_price FROM item WHERE i_id = " .. l.i)
      if price == nil then
         con:query("ROLLBACK")
         return true
      end
      local qty, dist = q1(con, string.format(
         "SELECT s_quantity, s_dist_%02d FROM stock WHERE s_w_id = %d AND s_i_id = %d FOR UPDATE",
         d, l.w, l.i))
      qty = tonumber(qty)
      if qty >= l.qty + 10 then
         qty = qty - l.qty
      else
         qty = qty - l.qty + 91
      end
      con:query(string.format(
         "UPDATE stock SET s_quantity = %d, s_ytd = s_ytd + %d, s_order_cnt = s_order_cnt + 1, " ..
         "s_remote_cnt = s_remote_cnt + %d WHERE s_w_id = %d AND s_i_id = %d",
         qty, l.qty, l.w ~= w and 1 or 0, l.w, l.i))
      con:query(string.format("INSERT INTO order_line VALUES (%d,%d,%d,%d,%d,%d,NULL,%d,%.2f,'%s')",
                              o_id, d, w, n, l.i, l.w, l.qty, l.qty * tonumber(price), dist))
   end
   con:query("COMMIT")
   return false
end

local function payment(t)
   local w, d, c = t.w, t.d, t.cust
   con:query("BEGIN")
   con:query(string.format("UPDATE warehouse SET w_ytd = w_ytd + %.2f WHERE w_id = %d", t.amount, w))
   q1(con, "SELECT w_name FROM warehouse WHERE w_id = " .. w)
   con:query(string.format("UPDATE district SET d_ytd = d_ytd + %.2f WHERE d_w_id = %d AND d_id = %d",
                           t.amount, w, d))
   q1(con, string.format("SELECT d_name FROM district WHERE d_w_id = %d AND d_id = %d", w, d))
   local cid = find_customer(c)
   local credit = q1(con, string.format(
      "SELECT c_credit FROM customer WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d FOR UPDATE",
      c.w, c.d, cid))
   local bc = ""
   if credit == "BC" then
      bc = string.format(", c_data = LEFT(CONCAT('%d %d %d %d %d %.2f ', c_data), 500)", cid, c.d, c.w,
                         d, w, t.amount)
   end
   con:query(string.format(
      "UPDATE customer SET c_balance = c_balance - %.2f, c_ytd_payment = c_ytd_payment + %.2f, " ..
      "c_payment_cnt = c_payment_cnt + 1%s WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d",
      t.amount, t.amount, bc, c.w, c.d, cid))
   con:query(string.format(
      "INSERT INTO history (h_c_id,h_c_d_id,h_c_w_id,h_d_id,h_w_id,h_date,h_amount,h_data) " ..
      "VALUES (%d,%d,%d,%d,%d,NOW(),%.2f,'paid')", cid, c.d, c.w, d, w, t.amount))
   con:query("COMMIT")
   return false
end

local function order_status(t)
   local c = t.cust
   con:query("BEGIN")
   local cid = find_customer(c)
   q1(con, string.format("SELECT c_balance, c_first, c_middle, c_last FROM customer " ..
                         "WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d", c.w, c.d, cid))
   local o_id = q1(con, string.format(
      "SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = %d AND o_d_id = %d " ..
      "AND o_c_id = %d ORDER BY o_id DESC LIMIT 1", c.w, c.d, cid))
   if o_id ~= nil then
      con:query(string.format(
         "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line " ..
         "WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id = %s", c.w, c.d, o_id))
   end
   con:query("COMMIT")
   return false
end

local function delivery(t)
   local w = t.w
   con:query("BEGIN")
   for d = 1, 10 do
      local o_id = q1(con, string.format(
         "SELECT no_o_id FROM new_order WHERE no_w_id = %d AND no_d_id = %d ORDER BY no_o_id " ..
         "LIMIT 1 FOR UPDATE", w, d))
      if o_id ~= nil then  -- a district without undelivered orders is skipped
         con:query(string.format(
            "DELETE FROM new_order WHERE no_w_id = %d AND no_d_id = %d AND no_o_id = %s", w, d, o_id))
         local cid = q1(con, string.format(
            "SELECT o_c_id FROM orders WHERE o_w_id = %d AND o_d_id = %d AND o_id = %s", w, d, o_id))
         con:query(string.format(
            "UPDATE orders SET o_carrier_id = %d WHERE o_w_id = %d AND o_d_id = %d AND o_id = %s",
            t.carrier, w, d, o_id))
         con:query(string.format(
            "UPDATE order_line SET ol_delivery_d = NOW() WHERE ol_w_id = %d AND ol_d_id = %d " ..
            "AND ol_o_id = %s", w, d, o_id))
         local total = q1(con, string.format(
            "SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id = %s",
            w, d, o_id))
         con:query(string.format(
            "UPDATE customer SET c_balance = c_balance + %s, c_delivery_cnt = c_delivery_cnt + 1 " ..
            "WHERE c_w_id = %d AND c_d_id = %d AND c_id = %s", total or "0", w, d, cid))
      end
   end
   con:query("COMMIT")
   return false
end

local function stock_level(t)
   local w, d = t.w, t.d
   con:query("BEGIN")
   local next_o = tonumber(q1(con, string.format(
      "SELECT d_next_o_id FROM district WHERE d_w_id = %d AND d_id = %d", w, d)))
   q1(con, string.format(
      "SELECT COUNT(DISTINCT s_i_id) FROM order_line JOIN stock ON s_w_id = %d AND s_i_id = ol_i_id " ..
      "WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id >= %d AND ol_o_id < %d AND s_quantity < %d",
      w, w, d, next_o - 20, next_o, t.threshold))
   con:query("COMMIT")
   return false
end

local RUN = {new_order, payment, order_status, delivery, stock_level}

-- the transaction this thread is on; kept when an error restarts the event, so that the retry
-- runs the same transaction with the same input
local pending = nil

function event()
   local t = pending
   if t == nil then
      t = gen(rnd(1, W))
      t.start = now_us()
      pending = t
   end
   local ok, res = pcall(RUN[t.kind], t)
   if not ok then
      pcall(con.query, con, "ROLLBACK")
      if type(res) == "table" and res.errcode == sysbench.error.RESTART_EVENT then
         bump(t.kind, 2)
      end
      error(res, 0)  -- sysbench restarts the event (ignorable error) or stops (fatal)
   end
   pending = nil
   bump(t.kind, 0)
   if res then
      bump(t.kind, 1)
   end
   local us = now_us() - t.start
   bump(t.kind, 3, us)
   bump_latency(t.kind, us)
end
