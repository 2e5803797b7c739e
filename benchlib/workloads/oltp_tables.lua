-- benchlib's prepare of sysbench 1.0.20's oltp tables: sysbench's own (oltp_common.lua), with row ids 1..table_size
-- on every system.
--
-- sysbench fills its tables through their AUTO_INCREMENT id, so the ids follow the server's auto_increment_increment
-- and auto_increment_offset: 1 on a lone server and in async replication, but a Galera node (wsrep_auto_increment_control,
-- on by default, which a session cannot override) uses the cluster's size (ids 1, 4, 7, ... on three nodes) and a
-- multi-primary group 7 (1, 8, 15, ...). The tests draw their row ids from 1..table_size: on such a table most draws
-- find no row (a point select reads nothing, an UPDATE changes nothing) and the rows they do find are a third or a
-- seventh of the table. Here sysbench inserts the ids 1..table_size itself (its --auto-inc=off way) into the table it
-- creates with AUTO_INCREMENT (its --auto-inc=on way): the same rows on every system, and a run's inserts still take
-- the server's own increments.
require("oltp_common")

local create = create_table
function create_table(drv, con, table_num)
  local proxy = setmetatable({}, {__index = function(_, name)
    return function(_, ...) return con[name](con, ...) end
  end})
  function proxy.query(_, sql)
    if sql:find("^%s*CREATE TABLE") then
      sql = sql:gsub("id INTEGER NOT NULL,", "id INTEGER NOT NULL AUTO_INCREMENT,", 1)
    end
    return con:query(sql)
  end
  local auto_inc = sysbench.opt.auto_inc
  sysbench.opt.auto_inc = false
  local ok, err = pcall(create, drv, proxy, table_num)
  sysbench.opt.auto_inc = auto_inc
  if not ok then
    error(err, 0)
  end
end
