-- benchlib insert workloads for flow-control studies (sysbench 1.0.20).
--
-- Inserts into wide tables (benchlib_wide1..N in the sbtest schema), the shape of the
-- "windmills" tables used in the published Group Replication / Galera flow-control
-- study: a BIGINT auto-increment key, a UUID, small integers, a date, a timestamp and
-- four 100-character text columns (about 500 bytes per row).
--
--   --rows-per-trx=1    one autocommit INSERT per transaction (single-row insert)
--   --rows-per-trx=50   BEGIN, 50 single-row INSERTs, COMMIT (batched insert)
--
-- Every event is one transaction, so sysbench's tps is transactions per second and
-- rows per second is tps * rows-per-trx. `prepare` creates the tables empty;
-- `cleanup` drops them.

sysbench.cmdline.options = {
  tables = {"Number of tables", 1},
  rows_per_trx = {"Rows inserted per transaction", 1},
  mysql_storage_engine = {"Storage engine", "innodb"},
}

local function create_table(con, i)
  con:query(string.format([[
CREATE TABLE IF NOT EXISTS benchlib_wide%d (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  uuid CHAR(36) NOT NULL,
  millid SMALLINT NOT NULL,
  kwatts_s INT NOT NULL,
  date DATE NOT NULL,
  location VARCHAR(50) NOT NULL,
  active TINYINT NOT NULL DEFAULT 1,
  time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  strrecordtype CHAR(3) NOT NULL,
  c1 VARCHAR(100) NOT NULL, c2 VARCHAR(100) NOT NULL,
  c3 VARCHAR(100) NOT NULL, c4 VARCHAR(100) NOT NULL,
  KEY k_millid (millid, active),
  KEY k_date (date)
) ENGINE=%s]], i, sysbench.opt.mysql_storage_engine))
end

function cmd_prepare()
  local drv = sysbench.sql.driver()
  local con = drv:connect()
  for i = sysbench.tid % sysbench.opt.threads + 1, sysbench.opt.tables, sysbench.opt.threads do
    create_table(con, i)
  end
  con:disconnect()
end

function cmd_cleanup()
  local drv = sysbench.sql.driver()
  local con = drv:connect()
  for i = 1, sysbench.opt.tables do
    con:query(string.format("DROP TABLE IF EXISTS benchlib_wide%d", i))
  end
  con:disconnect()
end

sysbench.cmdline.commands = {
  prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND},
  cleanup = {cmd_cleanup},
}

local text_pattern = string.rep("@", 100)

local function insert_one(table_id)
  con:query(string.format(
    "INSERT INTO benchlib_wide%d (uuid, millid, kwatts_s, date, location, strrecordtype, c1, c2, c3, c4) " ..
    "VALUES (UUID(), %d, %d, CURRENT_DATE(), '%s', 'BEN', '%s', '%s', '%s', '%s')",
    table_id, sysbench.rand.uniform(1, 400), sysbench.rand.uniform(1, 1000000),
    sysbench.rand.string(string.rep("@", 30)),
    sysbench.rand.string(text_pattern), sysbench.rand.string(text_pattern),
    sysbench.rand.string(text_pattern), sysbench.rand.string(text_pattern)))
end

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end

function thread_done()
  con:disconnect()
end

function event()
  local table_id = sysbench.rand.uniform(1, sysbench.opt.tables)
  local n = sysbench.opt.rows_per_trx
  if n <= 1 then
    insert_one(table_id)
  else
    con:query("BEGIN")
    for _ = 1, n do
      insert_one(table_id)
    end
    con:query("COMMIT")
  end
end
