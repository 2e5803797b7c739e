-- benchlib read-split load (sysbench 1.0.20): sysbench's oltp_read_only on a replica, its
-- sessions under a read consistency setting.
--
-- A campaign with `[load] read_threads = N` runs this on every node but the write node,
-- beside the write load on the write node, over the same dataset (sbtest1..N). Each
-- connection first runs the statements of --session-sql (';'-separated), e.g.
-- "SET SESSION wsrep_sync_wait = 1" or "SET SESSION group_replication_consistency =
-- 'BEFORE'", so the reads pay what the setting costs.

require("oltp_read_only")

sysbench.cmdline.options.session_sql =
  {"Statements run on each connection before its first read (';'-separated)", ""}

local oltp_thread_init = thread_init

function thread_init()
  oltp_thread_init()
  for statement in string.gmatch(sysbench.opt.session_sql, "[^;]+") do
    con:query(statement)
  end
end
