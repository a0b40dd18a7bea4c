-- clusterbench access-method microbenchmark for sysbench 1.0.20 (our own script).
--
-- One table per row size, sbtest<row_size>:
--   id  INT PRIMARY KEY       1..table_size
--   uk  INT UNIQUE            2 * id (a unique key that is not the clustered one)
--   k   INT, non-unique index table_size // batch groups of exactly `batch` rows each, spread
--                             over the table (k = (id - 1) % groups + 1); rows past the last
--                             full group get k = 0, which no event asks for
--   pad VARCHAR               row_size - 12 characters, so a row holds about row_size bytes
--
-- An event is one access of the chosen method; every event checks that it got exactly the rows
-- it asked for (rows_per_event below), so latency / rows is the time per row accessed:
--   pk        SELECT * ... WHERE id = ?                    1 row
--   pk_batch  SELECT * ... WHERE id IN (batch ids)         batch rows
--   uk        SELECT * ... WHERE uk = ?                    1 row
--   uk_batch  SELECT * ... WHERE uk IN (batch keys)        batch rows
--   eq        SELECT * ... WHERE k = ?                     batch rows (non-unique index)
--   range     SELECT * ... WHERE id BETWEEN x AND x+batch-1  batch rows
--   scan      SELECT * ... (whole table)                   table_size rows
--   noop      SELECT 1                                     1 row: the client's own cost
--
-- Run through cb_report.lua (CLUSTERBENCH_SB_MODULE=cb_access) so reports are JSON lines.

sysbench.cmdline.options = {
   table_size = {"Rows in the table", 10000},
   access_method = {"pk, pk_batch, uk, uk_batch, eq, range, scan or noop", "pk"},
   access_batch = {"Rows per batched, equality-bound or range access", 32},
   access_row_size = {"Approximate bytes per row (table sbtest<row_size>)", 20},
   mysql_storage_engine = {"Storage engine", "innodb"},
   -- accepted for the options clusterbench passes to every sysbench test
   tables = {"Unused (one table per row size)", 1},
   auto_inc = {"Unused (ids are given explicitly)", false},
}

local INT_BYTES = 12 -- id, uk, k

local function opt_int(name)
   return tonumber(sysbench.opt[name])
end

local function table_name()
   return "sbtest" .. opt_int("access_row_size")
end

local function pad_len()
   return math.max(1, opt_int("access_row_size") - INT_BYTES)
end

local function groups()
   return math.floor(opt_int("table_size") / opt_int("access_batch"))
end

local function check_options()
   local n, b, r = opt_int("table_size"), opt_int("access_batch"), opt_int("access_row_size")
   if b < 1 then
      error("clusterbench: --access-batch must be at least 1")
   end
   if n < b then
      error(string.format("clusterbench: --table-size %d is smaller than --access-batch %d", n, b))
   end
   if r < 16 or r > 16384 then
      error("clusterbench: --access-row-size must be 16..16384")
   end
end

function cmd_prepare()
   check_options()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   local t, n, len = table_name(), opt_int("table_size"), pad_len()
   local g, b = groups(), opt_int("access_batch")
   print(string.format("Creating table '%s' (%d rows of about %d bytes)...", t, n,
                       opt_int("access_row_size")))
   con:query(string.format(
      "CREATE TABLE %s (id INT NOT NULL, uk INT NOT NULL, k INT NOT NULL, " ..
      "pad VARCHAR(%d) NOT NULL, PRIMARY KEY (id), UNIQUE KEY uk_%s (uk), KEY k_%s (k)) " ..
      "ENGINE = %s", t, len, t, t, sysbench.opt.mysql_storage_engine))
   con:bulk_insert_init(string.format("INSERT INTO %s (id, uk, k, pad) VALUES", t))
   local template = string.rep("@", len)
   for id = 1, n do
      local k = 0
      if id <= g * b then
         k = (id - 1) % g + 1
      end
      con:bulk_insert_next(string.format("(%d, %d, %d, '%s')", id, 2 * id, k,
                                         sysbench.rand.string(template)))
   end
   con:bulk_insert_done()
   con:disconnect()
end

function cmd_cleanup()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   local t = table_name()
   print(string.format("Dropping table '%s'...", t))
   con:query("DROP TABLE IF EXISTS " .. t)
   con:disconnect()
end

-- not PARALLEL_COMMAND: one connection creates and fills the table
sysbench.cmdline.commands = {
   prepare = {cmd_prepare},
   cleanup = {cmd_cleanup},
}

local con, sql_select, method, n, b, g, expect

local function distinct_keys(count, first, last, mult)
   local seen, out = {}, {}
   while #out < count do
      local v = sysbench.rand.default(first, last)
      if not seen[v] then
         seen[v] = true
         out[#out + 1] = tostring(v * mult)
      end
   end
   return table.concat(out, ",")
end

local builders = {
   pk = function()
      return sql_select .. " WHERE id = " .. sysbench.rand.default(1, n)
   end,
   pk_batch = function()
      return sql_select .. " WHERE id IN (" .. distinct_keys(b, 1, n, 1) .. ")"
   end,
   uk = function()
      return sql_select .. " WHERE uk = " .. 2 * sysbench.rand.default(1, n)
   end,
   uk_batch = function()
      return sql_select .. " WHERE uk IN (" .. distinct_keys(b, 1, n, 2) .. ")"
   end,
   eq = function()
      return sql_select .. " WHERE k = " .. sysbench.rand.default(1, g)
   end,
   range = function()
      local x = sysbench.rand.default(1, n - b + 1)
      return string.format("%s WHERE id BETWEEN %d AND %d", sql_select, x, x + b - 1)
   end,
   scan = function()
      return sql_select
   end,
   noop = function()
      return "SELECT 1"
   end,
}

local function rows_per_event(m)
   if m == "pk" or m == "uk" or m == "noop" then
      return 1
   elseif m == "scan" then
      return n
   end
   return b
end

function thread_init()
   check_options()
   method = sysbench.opt.access_method
   if builders[method] == nil then
      error("clusterbench: unknown --access-method " .. tostring(method))
   end
   n, b, g = opt_int("table_size"), opt_int("access_batch"), groups()
   expect = rows_per_event(method)
   sql_select = "SELECT id, uk, k, pad FROM " .. table_name()
   con = sysbench.sql.driver():connect()
end

function thread_done()
   if con ~= nil then
      con:disconnect()
   end
end

function event()
   local rs = con:query(builders[method]())
   local got = rs ~= nil and tonumber(rs.nrows) or 0
   if got ~= expect then
      error(string.format("clusterbench: %s access returned %d rows, expected %d; " ..
                          "is %s prepared with --table-size %d and --access-batch %d?",
                          method, got, expect, table_name(), n, b))
   end
   rs:free()
end
