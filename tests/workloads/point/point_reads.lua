-- A throwaway workload: one point read by primary key a transaction, on sysbench's oltp tables (prepared by
-- benchlib with sysbench's own oltp_common: sbtest1..N of table_size rows).
sysbench.cmdline.options = {
  tables = {"Number of tables", 1},
  table_size = {"Rows a table", 10000},
}

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end

function thread_done()
  con:disconnect()
end

function event()
  local rs = con:query(string.format("SELECT c FROM sbtest%d WHERE id = %d", sysbench.rand.uniform(1, sysbench.opt.tables),
                                     sysbench.rand.uniform(1, sysbench.opt.table_size)))
  rs:free()
end
