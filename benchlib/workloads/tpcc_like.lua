-- benchlib's TPC-C-like workload (sysbench 1.0.20). Not an audited TPC-C: its transactions and data follow the
-- TPC-C specification's clauses 1-4 (nine tables, five transactions, the consistency conditions hold after a run),
-- with no keying or think times (a closed loop; --rate gives the open loop) and no terminal emulation.
--
--   prepare   W warehouses (--warehouses), in parallel (--threads): items, then each warehouse's stock, districts,
--             customers, history, orders, order lines and new orders, as clause 4.3.3.1 gives them; --scale < 1
--             shrinks the rows of a warehouse (items, stock, customers and orders) for quick tests
--   run       each thread has a home warehouse ((tid mod W) + 1); each event is one transaction drawn from the mix:
--             --mix=standard (New-Order 45, Payment 43, Order-Status, Delivery, Stock-Level 4 each, out of 100) or
--             --mix=23 (10/10/1/1/1 out of 23, as HammerDB and sysbench-tpcc draw), dealt from a shuffled deck of
--             that many cards per thread (clause 5.2.4.2), so the mix run is the mix asked within a deck a thread
--   cleanup   drops the nine tables
--
-- New-Order: 5-15 lines, 1% supplied by another warehouse, 1% of New-Orders end on an unused item and are rolled
-- back on purpose (counted apart from errors): a random one of every hundred a thread runs. Payment: 15% for a customer of another warehouse, 60% by last name.
-- history has a primary key (Group Replication refuses tables without one). No foreign keys.
--
-- What each thread did, by whole second of CLOCK_MONOTONIC and transaction type, goes to standard output on lines
-- of their own, read by benchlib (benchlib.workloads.tpcc):
--   benchlib-tpcc SECOND TYPE OK ROLLED_BACK LATENCY_SUM_MS [ERRNO:COUNT ...]
--   benchlib-tpcc-hist TYPE BUCKET:COUNT ...      (at the end: latencies, bucket = floor(20 * ln(ms)))
-- A transaction that ends in an error the server asks to retry (1213 deadlock or certification, 1205 lock wait,
-- 1020, 3101 and 1180 rollbacks at commit) is rolled back, counted by its error number, and the event restarted with
-- a transaction of the same type (new inputs); any other error ends the thread, as in sysbench's own tests.

sysbench.cmdline.options = {
  warehouses = {"Number of warehouses", 1},
  scale = {"Share of a warehouse's rows (1: 100,000 items and stock, 3,000 customers a district)", 1},
  mix = {"Transaction mix: standard (45/43/4/4/4) or 23 (10/10/1/1/1 out of 23)", "standard"},
  warehouse_part = {"This writer node's part of the home warehouses (1..warehouse-parts)", 1},
  warehouse_parts = {"Parts the home warehouses are split into, one a writer node (warehouse w: part (w-1) mod N + 1)",
                     1},
  writer = {"The node this part of the load writes to: its commits and errors also as benchlib-writer lines", "-"},
  mysql_storage_engine = {"Storage engine", "innodb"},
}

pcall(ffi.cdef, "typedef struct { long sec; long nsec; } benchlib_ts; int clock_gettime(int, benchlib_ts *);")
local ts = ffi.new("benchlib_ts")
local function now()
  ffi.C.clock_gettime(1, ts)  -- CLOCK_MONOTONIC: the clock benchlib's sampler keeps
  return tonumber(ts.sec) + tonumber(ts.nsec) / 1e9
end

local rand = sysbench.rand.uniform
local TYPES = {"new_order", "payment", "order_status", "delivery", "stock_level"}
local RETRY = {[1213] = true, [1205] = true, [1020] = true, [3101] = true, [1180] = true}
sysbench.hooks.sql_error_ignorable = function(e) return RETRY[e.sql_errno] == true end

local function sizes()
  local s = tonumber(sysbench.opt.scale)
  local items = math.max(100, math.floor(100000 * s))
  local customers = math.max(30, math.floor(3000 * s))
  return items, customers, customers - math.floor(customers * 0.3) + 1  -- first undelivered order
end

-- NURand(A, x, y) of clause 2.1.6, with the run's C (the loader's C for last names is 157: |C_run - C_load| = 86)
local C = {[255] = 243, [1023] = 259, [8191] = 7911}
local function nurand(a, x, y, c)
  return ((bit.bor(rand(0, a), rand(x, y)) + (c or C[a])) % (y - x + 1)) + x
end

local SYLLABLES = {"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}
local function last_name(n)
  return SYLLABLES[math.floor(n / 100) + 1] .. SYLLABLES[math.floor(n / 10) % 10 + 1] .. SYLLABLES[n % 10 + 1]
end

-- random strings (clause 4.3.2.2): a random slice of a random one of 256 random strings of 1,000 letters (or digits)
-- drawn once a thread: as random to the database, and the loader spends its time on rows, not on drawing letters
local POOL_SIZE, POOL_LEN, pools = 256, 1000, {}
local function pool(template)
  local p = pools[template]
  if p == nil then
    p = {}
    for i = 1, POOL_SIZE do
      p[i] = sysbench.rand.string(string.rep(template, POOL_LEN))
    end
    pools[template] = p
  end
  return p
end
local function slice(template, lo, hi)
  local n = rand(lo, hi)
  local at = rand(1, POOL_LEN - n + 1)
  return pool(template)[rand(1, POOL_SIZE)]:sub(at, at + n - 1)
end
local function astring(lo, hi)
  return slice("@", lo, hi)
end
local function nstring(lo, hi)
  return slice("#", lo, hi)
end
local function money(lo, hi)  -- cents to a decimal literal (concatenation: LuaJIT compiles it, not string.format)
  local c = rand(lo, hi)
  local cents = c % 100
  return math.floor(c / 100) .. (cents < 10 and ".0" or ".") .. cents
end

local SCHEMA = {
  [[CREATE TABLE IF NOT EXISTS warehouse (w_id INT NOT NULL, w_name VARCHAR(10), w_street_1 VARCHAR(20),
    w_street_2 VARCHAR(20), w_city VARCHAR(20), w_state CHAR(2), w_zip CHAR(9), w_tax DECIMAL(4,4),
    w_ytd DECIMAL(12,2), PRIMARY KEY (w_id))]],
  [[CREATE TABLE IF NOT EXISTS district (d_id TINYINT NOT NULL, d_w_id INT NOT NULL, d_name VARCHAR(10),
    d_street_1 VARCHAR(20), d_street_2 VARCHAR(20), d_city VARCHAR(20), d_state CHAR(2), d_zip CHAR(9),
    d_tax DECIMAL(4,4), d_ytd DECIMAL(12,2), d_next_o_id INT, PRIMARY KEY (d_w_id, d_id))]],
  [[CREATE TABLE IF NOT EXISTS customer (c_id INT NOT NULL, c_d_id TINYINT NOT NULL, c_w_id INT NOT NULL,
    c_first VARCHAR(16), c_middle CHAR(2), c_last VARCHAR(16), c_street_1 VARCHAR(20), c_street_2 VARCHAR(20),
    c_city VARCHAR(20), c_state CHAR(2), c_zip CHAR(9), c_phone CHAR(16), c_since DATETIME, c_credit CHAR(2),
    c_credit_lim DECIMAL(12,2), c_discount DECIMAL(4,4), c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2),
    c_payment_cnt INT, c_delivery_cnt INT, c_data VARCHAR(500), PRIMARY KEY (c_w_id, c_d_id, c_id),
    KEY idx_customer (c_w_id, c_d_id, c_last, c_first))]],
  [[CREATE TABLE IF NOT EXISTS history (h_id BIGINT NOT NULL AUTO_INCREMENT, h_c_id INT, h_c_d_id TINYINT,
    h_c_w_id INT, h_d_id TINYINT, h_w_id INT, h_date DATETIME, h_amount DECIMAL(6,2), h_data VARCHAR(24),
    PRIMARY KEY (h_id))]],
  [[CREATE TABLE IF NOT EXISTS orders (o_id INT NOT NULL, o_d_id TINYINT NOT NULL, o_w_id INT NOT NULL, o_c_id INT,
    o_entry_d DATETIME, o_carrier_id TINYINT, o_ol_cnt TINYINT, o_all_local TINYINT,
    PRIMARY KEY (o_w_id, o_d_id, o_id), KEY idx_orders (o_w_id, o_d_id, o_c_id, o_id))]],
  [[CREATE TABLE IF NOT EXISTS new_order (no_o_id INT NOT NULL, no_d_id TINYINT NOT NULL, no_w_id INT NOT NULL,
    PRIMARY KEY (no_w_id, no_d_id, no_o_id))]],
  [[CREATE TABLE IF NOT EXISTS order_line (ol_o_id INT NOT NULL, ol_d_id TINYINT NOT NULL, ol_w_id INT NOT NULL,
    ol_number TINYINT NOT NULL, ol_i_id INT, ol_supply_w_id INT, ol_delivery_d DATETIME, ol_quantity TINYINT,
    ol_amount DECIMAL(6,2), ol_dist_info CHAR(24), PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))]],
  [[CREATE TABLE IF NOT EXISTS item (i_id INT NOT NULL, i_im_id INT, i_name VARCHAR(24), i_price DECIMAL(5,2),
    i_data VARCHAR(50), PRIMARY KEY (i_id))]],
  [[CREATE TABLE IF NOT EXISTS stock (s_i_id INT NOT NULL, s_w_id INT NOT NULL, s_quantity SMALLINT,
    s_dist_01 CHAR(24), s_dist_02 CHAR(24), s_dist_03 CHAR(24), s_dist_04 CHAR(24), s_dist_05 CHAR(24),
    s_dist_06 CHAR(24), s_dist_07 CHAR(24), s_dist_08 CHAR(24), s_dist_09 CHAR(24), s_dist_10 CHAR(24),
    s_ytd DECIMAL(8,0), s_order_cnt SMALLINT, s_remote_cnt SMALLINT, s_data VARCHAR(50),
    PRIMARY KEY (s_w_id, s_i_id))]],
}
local TABLES = {"warehouse", "district", "customer", "history", "orders", "new_order", "order_line", "item", "stock"}

-- multi-row inserts of n rows (sysbench sends a statement each time its buffer fills)
local function bulk(con, head, rows_fn, n)
  con:bulk_insert_init(head)
  for k = 1, n do
    con:bulk_insert_next(rows_fn(k))
  end
  con:bulk_insert_done()
end

local function data_with_original(lo, hi)
  local s = astring(lo, hi)
  if rand(1, 10) == 1 then
    local at = rand(1, #s - 8)
    s = s:sub(1, at - 1) .. "ORIGINAL" .. s:sub(at + 8)
  end
  return s
end

local function load_items(con, first, last)
  bulk(con, "INSERT INTO item VALUES", function(k)
    local i = first + k - 1
    return "(" .. i .. "," .. rand(1, 10000) .. ",'" .. astring(14, 24) .. "'," .. money(100, 10000) .. ",'" ..
           data_with_original(26, 50) .. "')"
  end, last - first + 1)
end

local function load_stock(con, w, first, last)
  bulk(con, "INSERT INTO stock VALUES", function(k)
    local i = first + k - 1
    local d = {}
    for j = 1, 10 do
      d[j] = astring(24, 24)
    end
    return "(" .. i .. "," .. w .. "," .. rand(10, 100) .. ",'" .. table.concat(d, "','") .. "',0,0,0,'" ..
           data_with_original(26, 50) .. "')"
  end, last - first + 1)
end

local function load_district(con, w, d, customers, undelivered)
  local items = sizes()
  con:query(string.format("INSERT INTO district VALUES (%d,%d,'%s','%s','%s','%s','%s','%s11111',%s,30000.00,%d)",
                          d, w, astring(6, 10), astring(10, 20), astring(10, 20), astring(10, 20), astring(2, 2),
                          nstring(4, 4), string.format("%.4f", rand(0, 2000) / 10000), customers + 1))
  bulk(con, "INSERT INTO customer VALUES", function(c)
    local last = c <= 1000 and last_name(c - 1) or last_name(nurand(255, 0, 999, 157))
    local discount = rand(0, 5000)
    return "(" .. c .. "," .. d .. "," .. w .. ",'" .. astring(8, 16) .. "','OE','" .. last .. "','" ..
           astring(10, 20) .. "','" .. astring(10, 20) .. "','" .. astring(10, 20) .. "','" .. astring(2, 2) .. "','" ..
           nstring(4, 4) .. "11111','" .. nstring(16, 16) .. "',NOW(),'" .. (rand(1, 10) == 1 and "BC" or "GC") ..
           "',50000.00,0." .. string.rep("0", 4 - #tostring(discount)) .. discount .. ",-10.00,10.00,1,0,'" ..
           astring(300, 500) .. "')"
  end, customers)
  bulk(con, "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES",
       function(c)
         return "(" .. c .. "," .. d .. "," .. w .. "," .. d .. "," .. w .. ",NOW(),10.00,'" .. astring(12, 24) .. "')"
       end, customers)
  -- orders: o_c_id a random permutation of the customers
  local perm = {}
  for c = 1, customers do
    perm[c] = c
  end
  for c = customers, 2, -1 do
    local j = rand(1, c)
    perm[c], perm[j] = perm[j], perm[c]
  end
  local counts = {}
  bulk(con, "INSERT INTO orders VALUES", function(o)
    counts[o] = rand(5, 15)
    local carrier = o < undelivered and tostring(rand(1, 10)) or "NULL"
    return "(" .. o .. "," .. d .. "," .. w .. "," .. perm[o] .. ",NOW()," .. carrier .. "," .. counts[o] .. ",1)"
  end, customers)
  local lines = {}
  for o = 1, customers do
    for n = 1, counts[o] do
      lines[#lines + 1] = {o, n}
    end
  end
  bulk(con, "INSERT INTO order_line VALUES", function(k)
    local o, n = lines[k][1], lines[k][2]
    local delivered = o < undelivered
    return "(" .. o .. "," .. d .. "," .. w .. "," .. n .. "," .. rand(1, items) .. "," .. w .. "," ..
           (delivered and "NOW(),5,0.00,'" or "NULL,5," .. money(1, 999999) .. ",'") .. astring(24, 24) .. "')"
  end, #lines)
  bulk(con, "INSERT INTO new_order VALUES", function(k)
    return "(" .. (undelivered + k - 1) .. "," .. d .. "," .. w .. ")"
  end, customers - undelivered + 1)
end

-- the loader's units of work, shared out among the threads: 10 slices of the items, then per warehouse its row
-- and 10 slices of its stock, and its 10 districts
local function units()
  local out = {}
  for s = 1, 10 do
    out[#out + 1] = {"items", s}
  end
  for w = 1, sysbench.opt.warehouses do
    out[#out + 1] = {"warehouse", w}
    for s = 1, 10 do
      out[#out + 1] = {"stock", w, s}
    end
    for d = 1, 10 do
      out[#out + 1] = {"district", w, d}
    end
  end
  return out
end

function cmd_prepare()
  local drv = sysbench.sql.driver()
  local con = drv:connect()
  for _, ddl in ipairs(SCHEMA) do
    con:query(ddl .. " ENGINE=" .. sysbench.opt.mysql_storage_engine)
  end
  local items, customers, undelivered = sizes()
  local slice = math.ceil(items / 10)
  local work = units()
  local function load(u)
    con:query("BEGIN")
    if u[1] == "items" then
      load_items(con, (u[2] - 1) * slice + 1, math.min(items, u[2] * slice))
    elseif u[1] == "warehouse" then
      con:query(string.format("INSERT INTO warehouse VALUES (%d,'%s','%s','%s','%s','%s','%s11111',%s,300000.00)",
                              u[2], astring(6, 10), astring(10, 20), astring(10, 20), astring(10, 20),
                              astring(2, 2), nstring(4, 4), string.format("%.4f", rand(0, 2000) / 10000)))
    elseif u[1] == "stock" then
      load_stock(con, u[2], (u[3] - 1) * slice + 1, math.min(items, u[3] * slice))
    else
      load_district(con, u[2], u[3], customers, undelivered)
    end
    con:query("COMMIT")
  end
  for k = sysbench.tid + 1, #work, sysbench.opt.threads do
    -- a unit the server rolled back (a deadlock, a lock wait, a conflict) is loaded again, up to 5 times; any other
    -- error ends the prepare (benchlib reads sysbench's FATAL line: sysbench 1.0.20 exits 0 when a thread fails)
    for try = 1, 5 do
      local ok, err = pcall(load, work[k])
      if ok then
        break
      end
      pcall(con.query, con, "ROLLBACK")
      if type(err) ~= "table" or not RETRY[err.sql_errno] or try == 5 then
        error(type(err) == "table" and string.format("loading %s %s: error %d: %s", work[k][1],
                                                     table.concat(work[k], " ", 2), err.sql_errno, err.sql_errmsg)
              or err, 0)
      end
    end
  end
  con:disconnect()
end

function cmd_cleanup()
  local drv = sysbench.sql.driver()
  local con = drv:connect()
  for _, t in ipairs(TABLES) do
    con:query("DROP TABLE IF EXISTS " .. t)
  end
  con:disconnect()
end

sysbench.cmdline.commands = {
  prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND},
  cleanup = {cmd_cleanup},
}

-- ---------------------------------------------------------------------------------------------------- the run

local function one(sql)  -- the first row of a query, as a table of strings (nil: no row)
  local rs = con:query(sql)
  local row = rs and rs.nrows > 0 and rs:fetch_row() or nil
  if rs then rs:free() end
  return row
end

-- the first row of a query a transaction cannot do without (the row is in the dataset): when none comes back, a plain
-- read looks again, which raises the error of a transaction the server has aborted meanwhile (a Galera brute-force
-- abort: retried as any); otherwise the thread ends, saying which row and what the second look found
local function need(sql)
  local row = one(sql)
  if row ~= nil then
    return row
  end
  local again = one((sql:gsub(" FOR UPDATE$", "")))
  error(string.format("no row for %s: %s", sql, again and "a plain read then found it (the locking read missed it)" or
                      "this node's dataset lacks it (prepare it again)"), 0)
end

local function remote_warehouse(w)
  local n = sysbench.opt.warehouses
  if n < 2 then
    return w
  end
  local r = rand(1, n - 1)
  return r >= w and r + 1 or r
end

local function customer_by_name(w, d)
  local name = last_name(nurand(255, 0, 999))
  local rs = con:query(string.format("SELECT c_id FROM customer WHERE c_w_id = %d AND c_d_id = %d AND c_last = '%s' " ..
                                     "ORDER BY c_first", w, d, name))
  local ids = {}
  for _ = 1, rs.nrows do
    ids[#ids + 1] = tonumber(rs:fetch_row()[1])
  end
  rs:free()
  if #ids == 0 then  -- a name no customer has (possible only at --scale < 1): by id instead
    return nil
  end
  return ids[math.ceil(#ids / 2)]
end

local function new_order()
  local w, d = home, rand(1, 10)
  local c = nurand(1023, 1, customers)
  local lines, all_local = {}, 1
  for n = 1, rand(5, 15) do
    local supply = rand(1, 100) == 1 and remote_warehouse(w) or w
    if supply ~= w then
      all_local = 0
    end
    lines[n] = {i = nurand(8191, 1, items), supply = supply, qty = rand(1, 10)}
  end
  if rolls_back() then
    lines[#lines].i = items + 1  -- an unused item: the order is rolled back (clause 2.4.1.4)
  end
  table.sort(lines, function(a, b)  -- stock rows locked in one order: fewer deadlocks between New-Orders
    return a.supply < b.supply or (a.supply == b.supply and a.i < b.i)
  end)
  con:query("BEGIN")
  one(string.format("SELECT w_tax FROM warehouse WHERE w_id = %d", w))
  local dist = need(string.format("SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = %d AND d_id = %d FOR UPDATE",
                                  w, d))
  local o = tonumber(dist[2])
  con:query(string.format("UPDATE district SET d_next_o_id = %d WHERE d_w_id = %d AND d_id = %d", o + 1, w, d))
  one(string.format("SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d",
                    w, d, c))
  con:query(string.format("INSERT INTO orders VALUES (%d,%d,%d,%d,NOW(),NULL,%d,%d)", o, d, w, c, #lines, all_local))
  con:query(string.format("INSERT INTO new_order VALUES (%d,%d,%d)", o, d, w))
  for n, line in ipairs(lines) do
    local item = one(string.format("SELECT i_price, i_name, i_data FROM item WHERE i_id = %d", line.i))
    if item == nil then
      con:query("ROLLBACK")
      return "rolled_back"
    end
    local s = need(string.format("SELECT s_quantity, s_data, s_dist_%02d FROM stock WHERE s_i_id = %d AND " ..
                                 "s_w_id = %d FOR UPDATE", d, line.i, line.supply))
    local q = tonumber(s[1])
    q = q - line.qty >= 10 and q - line.qty or q - line.qty + 91
    con:query(string.format("UPDATE stock SET s_quantity = %d, s_ytd = s_ytd + %d, s_order_cnt = s_order_cnt + 1, " ..
                            "s_remote_cnt = s_remote_cnt + %d WHERE s_i_id = %d AND s_w_id = %d", q, line.qty,
                            line.supply ~= w and 1 or 0, line.i, line.supply))
    con:query(string.format("INSERT INTO order_line VALUES (%d,%d,%d,%d,%d,%d,NULL,%d,%.2f,'%s')", o, d, w, n, line.i,
                            line.supply, line.qty, line.qty * tonumber(item[1]), s[3]))
  end
  con:query("COMMIT")
end

local function payment()
  local w, d = home, rand(1, 10)
  local cw, cd = w, d
  if rand(1, 100) <= 15 and sysbench.opt.warehouses > 1 then
    cw, cd = remote_warehouse(w), rand(1, 10)
  end
  local amount = money(100, 500000)
  con:query("BEGIN")
  con:query(string.format("UPDATE warehouse SET w_ytd = w_ytd + %s WHERE w_id = %d", amount, w))
  one(string.format("SELECT w_name, w_street_1, w_city, w_state, w_zip FROM warehouse WHERE w_id = %d", w))
  con:query(string.format("UPDATE district SET d_ytd = d_ytd + %s WHERE d_w_id = %d AND d_id = %d", amount, w, d))
  one(string.format("SELECT d_name, d_street_1, d_city, d_state, d_zip FROM district WHERE d_w_id = %d AND d_id = %d",
                    w, d))
  local c = rand(1, 100) <= 60 and customer_by_name(cw, cd) or nil
  c = c or nurand(1023, 1, customers)
  local cust = need(string.format("SELECT c_first, c_last, c_balance, c_credit FROM customer WHERE c_w_id = %d AND " ..
                                  "c_d_id = %d AND c_id = %d FOR UPDATE", cw, cd, c))
  local data = ""
  if cust[4] == "BC" then
    data = string.format(", c_data = SUBSTRING(CONCAT('%d %d %d %d %d %s ', c_data), 1, 500)", c, cd, cw, d, w, amount)
  end
  con:query(string.format("UPDATE customer SET c_balance = c_balance - %s, c_ytd_payment = c_ytd_payment + %s, " ..
                          "c_payment_cnt = c_payment_cnt + 1%s WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d",
                          amount, amount, data, cw, cd, c))
  con:query(string.format("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, " ..
                          "h_data) VALUES (%d,%d,%d,%d,%d,NOW(),%s,'%s')", c, cd, cw, d, w, amount, astring(12, 24)))
  con:query("COMMIT")
end

local function order_status()
  local w, d = home, rand(1, 10)
  con:query("BEGIN")
  local c = rand(1, 100) <= 60 and customer_by_name(w, d) or nil
  c = c or nurand(1023, 1, customers)
  one(string.format("SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = %d AND c_d_id = %d " ..
                    "AND c_id = %d", w, d, c))
  local o = one(string.format("SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = %d AND o_d_id = %d " ..
                              "AND o_c_id = %d ORDER BY o_id DESC LIMIT 1", w, d, c))
  if o then
    con:query(string.format("SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line " ..
                            "WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id = %s", w, d, o[1]))
  end
  con:query("COMMIT")
end

local function delivery()
  local w, carrier = home, rand(1, 10)
  con:query("BEGIN")
  for d = 1, 10 do
    local no = one(string.format("SELECT no_o_id FROM new_order WHERE no_w_id = %d AND no_d_id = %d " ..
                                 "ORDER BY no_o_id LIMIT 1 FOR UPDATE", w, d))
    if no then
      local o = no[1]
      con:query(string.format("DELETE FROM new_order WHERE no_w_id = %d AND no_d_id = %d AND no_o_id = %s", w, d, o))
      local c = need(string.format("SELECT o_c_id FROM orders WHERE o_w_id = %d AND o_d_id = %d AND o_id = %s", w, d,
                                   o))[1]
      con:query(string.format("UPDATE orders SET o_carrier_id = %d WHERE o_w_id = %d AND o_d_id = %d AND o_id = %s",
                              carrier, w, d, o))
      con:query(string.format("UPDATE order_line SET ol_delivery_d = NOW() WHERE ol_w_id = %d AND ol_d_id = %d AND " ..
                              "ol_o_id = %s", w, d, o))
      local sum = one(string.format("SELECT COALESCE(SUM(ol_amount), 0) FROM order_line WHERE ol_w_id = %d AND " ..
                                    "ol_d_id = %d AND ol_o_id = %s", w, d, o))[1]
      con:query(string.format("UPDATE customer SET c_balance = c_balance + %s, c_delivery_cnt = c_delivery_cnt + 1 " ..
                              "WHERE c_w_id = %d AND c_d_id = %d AND c_id = %s", sum, w, d, c))
    end
  end
  con:query("COMMIT")
end

local function stock_level()
  local w, d, threshold = home, home_district, rand(10, 20)
  con:query("BEGIN")
  local next_o = tonumber(need(string.format("SELECT d_next_o_id FROM district WHERE d_w_id = %d AND d_id = %d", w,
                                             d))[1])
  one(string.format("SELECT COUNT(DISTINCT s_i_id) FROM order_line JOIN stock ON s_i_id = ol_i_id AND " ..
                    "s_w_id = ol_w_id WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id >= %d AND ol_o_id < %d AND " ..
                    "s_quantity < %d", w, d, next_o - 20, next_o, threshold))
  con:query("COMMIT")
end

local RUN = {new_order, payment, order_status, delivery, stock_level}
-- each mix as a deck of cards (clause 5.2.4.2): how many cards of each type
local MIXES = {standard = {45, 43, 4, 4, 4}, ["23"] = {10, 10, 1, 1, 1}}

local function shuffle(t)
  for i = #t, 2, -1 do
    local j = rand(1, i)
    t[i], t[j] = t[j], t[i]
  end
  return t
end

-- the thread's next transaction type: the next card of its shuffled deck, or the type whose transaction just ended
-- in an error the server asks to retry (the terminal tries that transaction again, with new inputs)
local function draw()
  if retry then
    local k = retry
    retry = nil
    return k
  end
  if card > #deck then
    deck, card = {}, 1
    for k, n in ipairs(MIXES[sysbench.opt.mix]) do
      for _ = 1, n do
        deck[#deck + 1] = k
      end
    end
    shuffle(deck)
  end
  card = card + 1
  return deck[card - 1]
end

-- whether this New-Order is the one of its hundred (a random one of every 100 a thread runs) rolled back on purpose
function rolls_back()
  if new_orders % 100 == 0 then
    unlucky = rand(1, 100)
  end
  new_orders = new_orders + 1
  return (new_orders - 1) % 100 + 1 == unlucky
end

-- per thread: this second's counts by type, and a latency histogram by type for the whole run
local second, counts, hist

local function flush()
  local committed, all = 0, {}
  for k, c in pairs(counts) do
    local errs = {}
    for code, n in pairs(c.errors) do
      errs[#errs + 1] = code .. ":" .. n
      all[code] = (all[code] or 0) + n
    end
    committed = committed + c.ok
    io.stdout:write(string.format("benchlib-tpcc %d %s %d %d %.3f %s\n", second, TYPES[k], c.ok, c.rolled_back,
                                  c.latency, table.concat(errs, " ")))
  end
  if sysbench.opt.writer ~= "-" and (committed > 0 or next(all) ~= nil) then
    -- as writers.lua counts an oltp_* test's: commits (a New-Order rolled back on purpose is none) and errors by
    -- number; nothing is given up (a retried error restarts the event with a transaction of the same type)
    local errs = {}
    for code, n in pairs(all) do
      errs[#errs + 1] = code .. ":" .. n
    end
    io.stdout:write(string.format("benchlib-writer %s %d %d 0 %s\n", sysbench.opt.writer, second, committed,
                                  table.concat(errs, " ")))
  end
  counts = {}
end

local function count(k, outcome, ms)
  local s = math.floor(now())
  if s ~= second then
    flush()
    second = s
  end
  local c = counts[k]
  if c == nil then
    c = {ok = 0, rolled_back = 0, latency = 0, errors = {}}
    counts[k] = c
  end
  if type(outcome) == "number" then
    c.errors[outcome] = (c.errors[outcome] or 0) + 1
  else
    c[outcome] = c[outcome] + 1
    c.latency = c.latency + ms
    local b = math.floor(20 * math.log(math.max(ms, 0.001)))
    hist[k][b] = (hist[k][b] or 0) + 1
  end
end

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  if MIXES[sysbench.opt.mix] == nil then
    error("unknown --mix " .. tostring(sysbench.opt.mix) .. ": standard or 23")
  end
  items, customers = sizes()
  local parts, part = sysbench.opt.warehouse_parts, sysbench.opt.warehouse_part
  if parts > sysbench.opt.warehouses or part < 1 or part > parts then
    error(string.format("--warehouse-part=%d of %d needs at least %d warehouses (got %d)", part, parts, parts,
                        sysbench.opt.warehouses))
  end
  local own = math.floor((sysbench.opt.warehouses - part) / parts) + 1  -- warehouses part, part + N, ...
  home = part + (sysbench.tid % own) * parts
  home_district = math.floor(sysbench.tid / own) % 10 + 1
  second, counts, hist = math.floor(now()), {}, {{}, {}, {}, {}, {}}
  deck, card, retry, new_orders, unlucky = {}, 1, nil, 0, 0
end

function thread_done()
  flush()
  for k = 1, 5 do
    local parts = {}
    for b, n in pairs(hist[k]) do
      parts[#parts + 1] = b .. ":" .. n
    end
    if #parts > 0 then
      io.stdout:write(string.format("benchlib-tpcc-hist %s %s\n", TYPES[k], table.concat(parts, " ")))
    end
  end
  io.stdout:flush()
  con:disconnect()
end

function event()
  local k = draw()
  local t0 = now()
  local ok, ret = pcall(RUN[k])
  local ms = (now() - t0) * 1000
  if ok then
    count(k, ret == "rolled_back" and "rolled_back" or "ok", ms)
    return
  end
  pcall(con.query, con, "ROLLBACK")
  retry = k
  local errno = type(ret) == "table" and ret.sql_errno or tonumber(tostring(ret):match("errno = (%d+)"))
  count(k, errno or 0, ms)
  if type(ret) ~= "table" then
    flush()
    io.stdout:flush()
  end
  error(ret, 0)  -- a retried error restarts the event (a new transaction); any other ends the thread
end
